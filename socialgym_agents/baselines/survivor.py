"""Heuristic Survivor player: a fixed alliance rule.

Every heuristic player says the pact line (``PACT``) in each discussion; the players who said it
publicly are its allies. In the vote all allies pick the same target — the live non-ally with
the lowest seat number — so their votes concentrate; with no non-ally left it votes for a
random other player. As a juror it votes for an ally finalist (the lowest seat), else at random.
Reads only the public talk and the live/jury lists in ``info["game_state"]``.
"""
from __future__ import annotations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

PACT = "I stand with the pact of the quiet table."


def allies(data: dict, me: str) -> set:
    return {t["speaker"] for t in data.get("talk", []) if t["text"] == PACT} | {me}


def seat_index(agent: str) -> int:
    return int(agent.rsplit("_", 1)[1])


def alliance_target(candidates, friends, rng):
    """The lowest-seat non-ally among ``candidates``, else a random candidate."""
    outsiders = sorted((c for c in candidates if c not in friends), key=seat_index)
    if outsiders:
        return outsiders[0]
    return rng.choice(sorted(candidates, key=seat_index))


class AllianceVoter(BasePolicy):
    policy_id = "scripted:heuristic:survivor"
    vote_phases = {"vote": "vote"}
    talk_phases = ("discussion", "plea")

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        me = key[1]
        data = info.get("game_state") or {}
        phase = info.get("phase")
        if phase in self.talk_phases:
            return Decision(f"say {PACT}")
        friends = allies(data, me)
        if phase in self.vote_phases:
            candidates = [a for a in data.get("alive", []) if a != me]
            return Decision(f"{self.vote_phases[phase]} {alliance_target(candidates, friends, rng)}")
        if phase == "jury":
            finalists = sorted(data.get("alive", []), key=seat_index)
            mine = [f for f in finalists if f in friends]
            return Decision(f"vote {(mine or [rng.choice(finalists)])[0]}")
        return Decision(sample_from_info(info, rng))


POLICY = AllianceVoter
