"""Skull heuristic: flowers, bounded bids, sensible flips.

- Placement: places a flower whenever it holds one (its skull only as a rare first disc, with
  probability ``SKULL_FIRST``, and never when a bid is open to it).
- Bids: it never bids with its own skull on the table (it would turn it first). Its own
  flowers are certain; every other face-down disc is taken to be a skull with probability
  ``SKULL_RATE`` (one skull among a player's four discs). It bids the largest N whose success
  estimate ``(1 - SKULL_RATE) ** (N - own flowers)`` is at least ``CONFIDENCE`` — opening as soon as
  bidding may open, raising to that N in the bidding, and passing when the standing bid is
  above it. (Against opponents who bid readily, waiting hands them the attempt.)
- Flipping: its own stack is turned automatically; then it turns the top disc of the
  tallest remaining face-down stack (discs placed late are rarely skulls).
"""
from __future__ import annotations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

SKULL_FIRST = 0.1
SKULL_RATE = 0.25
CONFIDENCE = 0.4


def success_estimate(n: int, own_flowers: int) -> float:
    """P(turning ``n`` flowers) when ``own_flowers`` of them are certain."""
    if own_flowers <= 0:
        return 0.0
    return (1 - SKULL_RATE) ** max(n - own_flowers, 0)


class SkullHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:skull"

    def best_bid(self, gs: dict, low: int) -> int | None:
        stack = gs["my_stack"]
        own = 0 if "skull" in stack else len(stack)
        candidates = [n for n in range(low, gs["on_table"] + 1) if success_estimate(n, own) >= CONFIDENCE]
        return max(candidates) if candidates else None

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        phase = info.get("phase")
        rng = self.rng(key)
        if "my_hand" not in gs:
            return Decision(sample_from_info(info, rng))
        hand, stack = gs["my_hand"], gs["my_stack"]
        if phase == "place":
            if gs["can_bid"]:
                bid = self.best_bid(gs, 1)
                if bid is not None:
                    return Decision(f"bid {bid}")
            if hand.get("flower", 0) > 0:
                if not stack and hand.get("skull", 0) > 0 and rng.random() < SKULL_FIRST:
                    return Decision("place skull")
                return Decision("place flower")
            if hand.get("skull", 0) > 0:
                return Decision("place skull")
            return Decision("bid 1")   # empty hand with its own skull down: forced
        if phase == "bidding":
            bid = self.best_bid(gs, gs["bid"] + 1)
            return Decision(f"bid {bid}" if bid is not None else "pass")
        if phase == "flip":
            me = info["agent"]
            down = {a: n for a, n in gs["face_down"].items() if a != me and n > 0}
            tallest = max(down.values())
            return Decision(f"flip {min(a for a, n in down.items() if n == tallest)}")
        return Decision(sample_from_info(info, rng))


POLICY = SkullHeuristic
