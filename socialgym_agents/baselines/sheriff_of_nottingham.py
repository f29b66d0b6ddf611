"""Heuristic Sheriff of Nottingham player.

Merchant: smuggles with a small tuned probability (``SMUGGLE_PROB``), otherwise packs
honestly — against a sheriff who inspects half the bags an honest bag is worth more (4 vs 2).
Sheriff: inspects a merchant when the estimated chance that it smuggles is at least the
break-even ``1/3`` (inspecting pays 4·p − 2·(1 − p) ≥ 0). The estimate is a Beta(1, 1) prior
updated with that merchant's bags the sheriff has seen opened so far (the public decision
log), so unknown merchants are inspected and proven-honest ones are waved through.
Talk: a short fixed line (no information). Reads only ``info["game_state"]`` (public data).
"""
from __future__ import annotations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

SMUGGLE_PROB = 0.1
INSPECT_THRESHOLD = 1 / 3


def smuggle_estimate(decisions: list, merchant: str) -> float:
    opened = [d["contents"] for d in decisions if d["merchant"] == merchant and d["contents"] is not None]
    return (1 + sum(c == "smuggle" for c in opened)) / (2 + len(opened))


class SheriffHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:sheriff_of_nottingham"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        phase = info.get("phase")
        data = info.get("game_state") or {}
        if phase == "pack":
            return Decision("smuggle" if rng.random() < SMUGGLE_PROB else "honest")
        if phase == "negotiate":
            return Decision("say My bag is as honest as the day is long.")
        if phase == "inspect" and data.get("undecided"):
            merchant = data["undecided"][0]
            p = smuggle_estimate(data.get("decisions", []), merchant)
            return Decision(f"{'inspect' if p >= INSPECT_THRESHOLD else 'pass'} {merchant}")
        return Decision(sample_from_info(info, rng))


POLICY = SheriffHeuristic
