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
from dataclasses import dataclass

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.scripted import sample_from_info

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
        game = info.get("game_state") or {}
        players = game.get("players", {})
        speech = public_speech(observation.get("text", ""), players)
        seat = _Seat(rng=self.rng(key), info=info, game=game, phase=info.get("phase"), role=info.get("role"),
                     me=info["agent"], players=players, alive=game.get("alive", []), speech=speech,
                     claimers={a for a, line in speech if CLAIM in line})
        handler = _HANDLERS.get(seat.phase)
        return handler(seat) if handler else Decision(sample_from_info(info, seat.rng))


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


@dataclass
class _Seat:
    """What one decision reads: RNG, info, the seat's facts and the public speech so far."""
    rng: object
    info: dict
    game: dict
    phase: str
    role: str
    me: str
    players: dict
    alive: list
    speech: list
    claimers: set

    @property
    def others(self) -> list:
        return [a for a in self.alive if a != self.me]


def _bid(seat: _Seat) -> Decision:
    if seat.role in ("Werewolf", "Jester"):
        return Decision(f"bid {seat.rng.randint(7, 10)}")
    return Decision(f"bid {0 if seat.me in seat.claimers else seat.rng.randint(3, 8)}")


def _speak(seat: _Seat) -> Decision:
    if seat.role == "Jester":
        return Decision("say Maybe I know more than I say. Draw your own conclusions.")
    if seat.role == "Werewolf":
        suspect = _wolf_target(seat.game, seat.speech, seat.claimers)
        return Decision(f"say {CLAIM}. I suspect {seat.players[suspect]}." if suspect else f"say {CLAIM}.")
    return Decision(f"say {CLAIM}. Everyone should say what they are.")


def _self_report(seat: _Seat) -> Decision:
    return Decision("label none 90" if seat.role in ("Villager", "Doctor") else "label strategic_deception 80")


def _suspicion(seat: _Seat) -> Decision:
    speaker = seat.speech[-1][0] if seat.speech else None
    return Decision("rate 20" if speaker in seat.claimers else "rate 70")


def _night_kill(seat: _Seat) -> Decision:
    return Decision(f"kill {seat.players[_wolf_target(seat.game, seat.speech, seat.claimers)]}")


def _doctor(seat: _Seat) -> Decision:
    accusers = [a for a, line in seat.speech if line.startswith("I vote for ") and a in seat.alive and a != seat.me]
    return Decision(f"protect {seat.players[accusers[-1] if accusers else seat.me]}")


def _vote(seat: _Seat) -> Decision:
    players = seat.players
    if seat.role == "Werewolf":
        target = _wolf_target(seat.game, seat.speech, seat.claimers)
        return Decision(f"vote {players[target]} {CLAIM}; {players[target]} worries me."
                        if target and target != seat.me else "abstain")
    if seat.role == "Jester":
        return Decision(f"vote {players[seat.rng.choice(seat.others)]} no comment, really.")
    target = _village_target(seat.game, seat.claimers, seat.me) or (seat.others[0] if seat.others else None)
    return Decision(f"vote {players[target]} {CLAIM}; {players[target]} has not said so." if target else "abstain")


def _revote(seat: _Seat) -> Decision:
    if seat.role == "Werewolf":
        safe = [a for a in seat.alive if a in seat.claimers and a not in seat.game.get("werewolves", [])]
        return Decision(f"vote {seat.players[safe[0]]}" if safe else "abstain")
    if seat.role == "Jester":
        return Decision("abstain")
    target = _village_target(seat.game, seat.claimers, seat.me)
    return Decision(f"vote {seat.players[target]}" if target else "abstain")


_HANDLERS = {"debate_bid": _bid, "extra_bid": _bid, "debate_speak": _speak, "extra_speak": _speak,
             "defense": _speak, "self_report": _self_report, "suspicion": _suspicion,
             "night_kill": _night_kill, "doctor": _doctor, "vote": _vote, "revote": _revote}

POLICY = TriadicWerewolfHeuristic
