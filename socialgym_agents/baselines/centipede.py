"""Heuristic for Centipede: pass early to grow the pot, take at node 5 (as first mover, 14 vs
the 13 of letting the other take at 6) or at node 6 (as second mover: 24 now beats 16)."""
from ..base import BasePolicy, Decision


class LateTaker(BasePolicy):
    policy_id = "scripted:heuristic:centipede"

    def act(self, observation, info, key=("", "")):
        node = (info.get("game_state") or {}).get("node", 1)
        return Decision("take" if node >= 5 else "pass")


POLICY = LateTaker
