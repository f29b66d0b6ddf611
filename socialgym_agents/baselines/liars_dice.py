"""Liar's Dice heuristic: bid and call from the binomial probability of a bid given own dice.

For a bid "at least Q dice show F" the seat knows its own dice; each of the other ``n``
dice in play shows F with probability 1/6, so P(bid true) = P(Binomial(n, 1/6) >= Q - own F).
Opening: the highest bid that is still at least ``OPEN_CONFIDENCE`` likely (ties: higher face).
Answering a bid: call ``liar`` when the bid is less likely true than the best raise available,
measured as P(bid false) > P(best raise true); otherwise make that raise (smallest quantity).
"""
from __future__ import annotations

from math import comb

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

FACE_PROBABILITY = 1 / 6
OPEN_CONFIDENCE = 0.6


def at_least(n: int, k: int, p: float = FACE_PROBABILITY) -> float:
    """P(Binomial(n, p) >= k)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return sum(comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def bid_probability(bid, my_dice, dice_in_play: int) -> float:
    quantity, face = bid
    return at_least(dice_in_play - len(my_dice), quantity - my_dice.count(face))


def raises(new, old) -> bool:
    return old is None or new[0] > old[0] or (new[0] == old[0] and new[1] > old[1])


class LiarsDiceHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:liars_dice"

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        if "my_dice" not in gs or info.get("phase") != "bid":
            return Decision(sample_from_info(info, self.rng(key)))
        mine, total = gs["my_dice"], gs["dice_in_play"]
        faces = gs.get("faces", 6)
        standing = tuple(gs["bid"]) if gs.get("bid") else None
        options = [(q, f) for q in range(1, total + 1) for f in range(1, faces + 1) if raises((q, f), standing)]
        scored = [(bid_probability(b, mine, total), b) for b in options]
        if standing is None:
            confident = [(b[0], b[1]) for p, b in scored if p >= OPEN_CONFIDENCE]
            q, f = max(confident) if confident else max(scored)[1]
            return Decision(f"bid {q} {f}")
        p_true = bid_probability(standing, mine, total)
        best_p = max((p for p, _ in scored), default=0.0)
        if not scored or 1 - p_true > best_p:
            return Decision("liar")
        q, f = min(b for p, b in scored if p == best_p)
        return Decision(f"bid {q} {f}")


POLICY = LiarsDiceHeuristic
