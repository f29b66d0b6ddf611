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
from dataclasses import dataclass

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.scripted import sample_from_info

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
        game = info.get("game_state") or {}
        seat = _Seat(rng=self.rng(key), info=info, phase=info.get("phase"), me=info["agent"],
                     players=game.get("players", {}), alive=game.get("alive", []), game=game)
        claimants, findings = seer_claims(observation.get("text", ""), seat.players)
        role = info.get("role")
        if role == "Werewolf":
            return _werewolf(seat, claimants)
        if role == "Seer" and seat.phase in ("seer", "day_talk", "day_vote"):
            return _seer(seat)
        accused = [a for a in seat.alive if findings.get(a) is True and a != seat.me]
        if role == "Witch" and seat.phase == "witch":
            return _witch(seat, accused)
        return _villager(seat, accused)


@dataclass
class _Seat:
    """What one decision reads: the seat's RNG, info, phase, id, names and the live players."""
    rng: object
    info: dict
    phase: str
    me: str
    players: dict
    alive: list
    game: dict


def _werewolf(seat: _Seat, claimants: list) -> Decision:
    """Both wolves name the same target: a Seer claimant first, else the first live villager."""
    targets = [a for a in seat.alive if a not in seat.game["werewolves"]]
    threats = [a for a in claimants if a in targets]
    target = (threats or targets or [None])[0]
    name = seat.players.get(target)
    if seat.phase == "night_talk":
        return Decision(f"say Let's take {name}." if target else "pass")
    if seat.phase == "wolf_kill":
        return Decision(f"kill {name}")
    if seat.phase == "day_vote":
        return Decision(f"vote {name}" if target and target != seat.me else "abstain")
    return Decision("pass") if seat.phase == "day_talk" else Decision(sample_from_info(seat.info, seat.rng))


def _seer(seat: _Seat) -> Decision:
    """Inspect someone new, report every finding truthfully, vote a known Werewolf."""
    known = seat.game.get("inspections", {})
    others = [a for a in seat.alive if a != seat.me]
    if seat.phase == "seer":
        fresh = [a for a in others if a not in known]
        return Decision(f"inspect {seat.players[seat.rng.choice(fresh or others)]}")
    if seat.phase == "day_talk":
        if not known:
            return Decision("pass")
        report = " ".join(f"{seat.players[a]} is {'a' if w else 'not a'} Werewolf." for a, w in known.items())
        return Decision(f"say Seer report: {report}")
    wolves = [a for a, w in known.items() if w and a in seat.alive]
    if wolves:
        return Decision(f"vote {seat.players[wolves[0]]}")
    suspects = [a for a in others if a not in known]
    return Decision(f"vote {seat.players[seat.rng.choice(suspects)]}" if suspects else "abstain")


def _witch(seat: _Seat, accused: list) -> Decision:
    """Poison an accused Werewolf, else save the victim while the save lasts."""
    if seat.game.get("poison_left") and accused:
        return Decision(f"poison {seat.players[accused[0]]}")
    if seat.game.get("save_left") and seat.game.get("victim"):
        return Decision("save")
    return Decision("pass")


def _villager(seat: _Seat, accused: list) -> Decision:
    """Stay quiet, vote whom the Seer report accuses, else abstain."""
    if seat.phase == "day_talk":
        return Decision("pass")
    if seat.phase == "day_vote":
        return Decision(f"vote {seat.players[accused[0]]}" if accused else "abstain")
    return Decision(sample_from_info(seat.info, seat.rng))


POLICY = WerewolvesHeuristic
