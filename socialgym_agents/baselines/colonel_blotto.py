"""Colonel Blotto heuristic: a near-even split, the remainder on randomly chosen fields.

Against an opponent who picks any legal allocation with equal chance, spreading the troops
evenly wins most: with 10 troops on 3 fields, 4 3 3 (in any order) has the best expected
reward of all 66 allocations (+0.32 against such an opponent), while a concentrated 5 5 0 has
+0.08. The fields that get one troop more are drawn from the seat's RNG, so that the split is
not one fixed, exploitable allocation. Talk turns pass. Reads only ``info["game_state"]``.
"""
from __future__ import annotations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info


def even_split(troops: int, fields: int, rng) -> list[int]:
    """``troops`` over ``fields`` as evenly as whole numbers allow; which fields get the
    remainder's extra troop is drawn from ``rng``."""
    base, extra = divmod(troops, fields)
    favoured = set(rng.sample(range(fields), extra))
    return [base + (i in favoured) for i in range(fields)]


class BlottoEvenSplit(BasePolicy):
    policy_id = "scripted:heuristic:colonel_blotto"

    def act(self, observation, info, key=("", "")):
        state = info.get("game_state") or {}
        if info.get("phase") == "talk":
            return Decision("pass")
        if info.get("phase") != "allocate" or "troops" not in state:
            return Decision(sample_from_info(info, self.rng(key)))
        split = even_split(state["troops"], state["fields"], self.rng(key))
        return Decision("allocate " + " ".join(map(str, split)))


POLICY = BlottoEvenSplit
