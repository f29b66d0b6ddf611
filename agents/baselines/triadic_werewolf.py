"""Heuristic baseline for Triadic Werewolf.

Reads only what its seat may see: ``info["game_state"]`` (alive players, votes, first votes of
the day, plus ``werewolves`` for a Werewolf) and the public lines of ``observation["text"]``.

- Villagers and the Doctor openly claim "I am a Villager" (in the debate and in every vote
  reason) and, in the revote, exile the live non-claimer who drew the most first votes today
  (ties: first in seat order); with no non-claimer they abstain. The Doctor protects the most
  recent accuser (the author of the latest "I vote for" line), else itself.
- Werewolves bid high and deflect: they claim to be Villagers too, accuse a non-Werewolf, never
  vote or kill a partner, and in the revote exile only a player who claimed to be a Villager
  (a Jester would not claim), else abstain. Both kill the same target: the latest accuser of a
  Werewolf, else the first live claimer, else the first live non-Werewolf.
- The Jester bids high, never claims, and gives evasive reasons.
- Measurement phases: label ``none`` (village) or ``strategic_deception`` (Werewolves, Jester);
  rate a claimer 20, anyone else 70.
"""
from __future__ import annotations

import re

from agents.base import BasePolicy, Decision
from agents.scripted import sample_from_info

CLAIM = "I am a Villager"
_PUBLIC = re.compile(r"^\[R\d+ [a-z_]+\] (\S+): (.*)$")


def public_speech(text: str, players: dict) -> list:
    """[(agent, text)] of the public player lines of an observation, oldest first."""
    by_name = {name: agent for agent, name in players.items()}
    out = []
    for line in text.splitlines():
        match = _PUBLIC.match(line)
        if match and match.group(1) in by_name:
            out.append((by_name[match.group(1)], match.group(2)))
    return out


class TriadicWerewolfHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:triadic_werewolf"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        game = info.get("game_state") or {}
        phase, role = info.get("phase"), info.get("role")
        players = game.get("players", {})
        me = info["agent"]
        alive = game.get("alive", [])
        speech = public_speech(observation.get("text", ""), players)
        claimers = {a for a, line in speech if CLAIM in line}
        wolves = game.get("werewolves", [])
        others = [a for a in alive if a != me]

        if phase in ("debate_bid", "extra_bid"):
            if role in ("Werewolf", "Jester"):
                return Decision(f"bid {rng.randint(7, 10)}")
            return Decision(f"bid {0 if me in claimers else rng.randint(3, 8)}")
        if phase in ("debate_speak", "extra_speak", "defense"):
            if role == "Jester":
                return Decision("say Maybe I know more than I say. Draw your own conclusions.")
            if role == "Werewolf":
                suspect = self._wolf_target(game, speech, claimers)
                return Decision(f"say {CLAIM}. I suspect {players[suspect]}." if suspect else f"say {CLAIM}.")
            return Decision(f"say {CLAIM}. Everyone should say what they are.")
        if phase == "self_report":
            return Decision("label none 90" if role in ("Villager", "Doctor") else "label strategic_deception 80")
        if phase == "suspicion":
            speaker = speech[-1][0] if speech else None
            return Decision("rate 20" if speaker in claimers else "rate 70")
        if phase == "night_kill":
            target = self._wolf_target(game, speech, claimers)
            return Decision(f"kill {players[target]}")
        if phase == "doctor":
            accusers = [a for a, line in speech if line.startswith("I vote for ") and a in alive and a != me]
            return Decision(f"protect {players[accusers[-1] if accusers else me]}")
        if phase == "vote":
            if role == "Werewolf":
                target = self._wolf_target(game, speech, claimers)
                return Decision(f"vote {players[target]} {CLAIM}; {players[target]} worries me."
                                if target and target != me else "abstain")
            if role == "Jester":
                return Decision(f"vote {players[rng.choice(others)]} no comment, really.")
            target = self._village_target(game, claimers, me) or (others[0] if others else None)
            return Decision(f"vote {players[target]} {CLAIM}; {players[target]} has not said so."
                            if target else "abstain")
        if phase == "revote":
            if role == "Werewolf":
                safe = [a for a in alive if a in claimers and a not in wolves]
                return Decision(f"vote {players[safe[0]]}" if safe else "abstain")
            if role == "Jester":
                return Decision("abstain")
            target = self._village_target(game, claimers, me)
            return Decision(f"vote {players[target]}" if target else "abstain")
        return Decision(sample_from_info(info, rng))

    @staticmethod
    def _village_target(game, claimers, me):
        """The live non-claimer (not me) with the most first votes today; seat order breaks ties."""
        suspects = [a for a in game.get("alive", []) if a not in claimers and a != me]
        if not suspects:
            return None
        counts = {a: 0 for a in suspects}
        for target in game.get("first_votes", {}).values():
            if target in counts:
                counts[target] += 1
        return max(suspects, key=lambda a: counts[a])   # max keeps the first on ties (seat order)

    @staticmethod
    def _wolf_target(game, speech, claimers):
        """Both Werewolves compute the same victim from public facts."""
        wolves = game.get("werewolves", [])
        alive = [a for a in game.get("alive", []) if a not in wolves]
        by_name = {n: a for a, n in game.get("players", {}).items()}
        accusers = [a for a, line in speech if a in alive and line.startswith("I vote for ")
                    and by_name.get(line[len("I vote for "):].split(":")[0]) in wolves]
        if accusers:
            return accusers[-1]
        claiming = [a for a in alive if a in claimers]
        return (claiming or alive or [None])[0]


POLICY = TriadicWerewolfHeuristic
