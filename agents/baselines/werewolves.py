"""Heuristic baseline for Werewolves.

Reads only what its seat may see: ``info["game_state"]`` (alive players, deaths, exiles, votes,
plus its own private facts: ``werewolves`` for a Werewolf, ``inspections`` for the Seer,
``victim``/potions for the Witch) and the public lines of ``observation["text"]``.

- Seer: inspects an uninspected live player each night and reports every finding truthfully
  by day ("Seer report: X is a Werewolf. Y is not a Werewolf."); votes a known Werewolf.
- Villagers and Witch: vote the live players the Seer report accuses, never one it cleared;
  without an accusation they abstain. The Witch poisons an accused Werewolf, else saves the
  victim while the save lasts.
- Werewolves: never kill or vote a partner; both pick the same target (a Seer claimant first,
  else the first live non-Werewolf in seat order) for the kill and the vote.
"""
from __future__ import annotations

import re

from agents.base import BasePolicy, Decision
from agents.scripted import sample_from_info

_REPORT = re.compile(r"^\[R\d+ day_talk\] (\S+): Seer report: (.*)$")
_FINDING = re.compile(r"(\S+) is (not )?a Werewolf")


def seer_claims(text: str, players: dict) -> tuple[list, dict]:
    """(claimants, findings) from the public "Seer report" lines: findings maps an agent to
    True (accused) / False (cleared)."""
    by_name = {name: agent for agent, name in players.items()}
    claimants, findings = [], {}
    for line in text.splitlines():
        match = _REPORT.match(line)
        if not match or match.group(1) not in by_name:
            continue
        claimants.append(by_name[match.group(1)])
        for name, negated in _FINDING.findall(match.group(2)):
            if name in by_name:
                findings[by_name[name]] = not negated
    return claimants, findings


class WerewolvesHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:werewolves"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        game = info.get("game_state") or {}
        phase, role = info.get("phase"), info.get("role")
        players = game.get("players", {})
        me = info["agent"]
        alive = game.get("alive", [])
        claimants, findings = seer_claims(observation.get("text", ""), players)
        if role == "Werewolf":
            wolves = game["werewolves"]
            targets = [a for a in alive if a not in wolves]
            threats = [a for a in claimants if a in targets]
            target = (threats or targets or [None])[0]
            if phase == "night_talk":
                return Decision(f"say Let's take {players[target]}." if target else "pass")
            if phase == "wolf_kill":
                return Decision(f"kill {players[target]}")
            if phase == "day_vote":
                return Decision(f"vote {players[target]}" if target and target != me else "abstain")
            return Decision("pass") if phase == "day_talk" else Decision(sample_from_info(info, rng))
        if role == "Seer":
            known = game.get("inspections", {})
            if phase == "seer":
                fresh = [a for a in alive if a != me and a not in known]
                return Decision(f"inspect {players[rng.choice(fresh or [a for a in alive if a != me])]}")
            if phase == "day_talk":
                if not known:
                    return Decision("pass")
                report = " ".join(f"{players[a]} is {'a' if w else 'not a'} Werewolf." for a, w in known.items())
                return Decision(f"say Seer report: {report}")
            if phase == "day_vote":
                wolves = [a for a, w in known.items() if w and a in alive]
                if wolves:
                    return Decision(f"vote {players[wolves[0]]}")
                suspects = [a for a in alive if a != me and a not in known]
                return Decision(f"vote {players[rng.choice(suspects)]}" if suspects else "abstain")
        accused = [a for a in alive if findings.get(a) is True and a != me]
        if role == "Witch" and phase == "witch":
            if game.get("poison_left") and accused:
                return Decision(f"poison {players[accused[0]]}")
            if game.get("save_left") and game.get("victim"):
                return Decision("save")
            return Decision("pass")
        if phase == "day_talk":
            return Decision("pass")
        if phase == "day_vote":
            return Decision(f"vote {players[accused[0]]}" if accused else "abstain")
        return Decision(sample_from_info(info, rng))


POLICY = WerewolvesHeuristic
