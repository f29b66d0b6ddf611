"""Heuristic Dead Last player: a fixed alliance rule plus equal splits.

Heuristic players say the pact line (``PACT``) in each discussion; those who said it publicly
are allies. In the point phase all allies point at the same player — the live non-ally with
the lowest seat number (a random other player when no non-ally is left) — so that, once the
allies are a majority, they eliminate outsiders every round. In the final every ally offers
the same equal split: 100 // k to each survivor in the listed order, the remainder to the
first ones, so allied offers are identical. Reads only ``info["game_state"]``.
"""
from __future__ import annotations

from ..base import Decision
from .survivor import PACT, AllianceVoter

__all__ = ["PACT", "equal_split", "DeadLastAlliance", "POLICY"]


def equal_split(k: int, total: int = 100) -> list[int]:
    base, extra = divmod(total, k)
    return [base + (1 if i < extra else 0) for i in range(k)]


class DeadLastAlliance(AllianceVoter):
    policy_id = "scripted:heuristic:dead_last"
    vote_phases = {"point": "point"}
    talk_phases = ("discussion", "final_negotiation")

    def act(self, observation, info, key=("", "")):
        if info.get("phase") == "final_offer":
            k = len((info.get("game_state") or {}).get("survivors", [])) or 3
            return Decision("offer " + " ".join(map(str, equal_split(k))))
        return super().act(observation, info, key)


POLICY = DeadLastAlliance
