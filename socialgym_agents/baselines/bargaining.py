"""Heuristic for Bargaining: propose to keep 6 (a split most responders accept) and accept any
offer that gives us at least 3 (rejecting costs us as much as the proposer)."""
from ..base import BasePolicy, Decision

KEEP = 6
ACCEPT_AT_LEAST = 3
PIE = 10


class FairMinded(BasePolicy):
    policy_id = "scripted:heuristic:bargaining"

    def act(self, observation, info, key=("", "")):
        if info.get("phase") == "propose":
            return Decision(f"propose {KEEP}")
        keep = (info.get("game_state") or {}).get("offer_keep")
        return Decision("accept" if keep is not None and PIE - keep >= ACCEPT_AT_LEAST else "reject")


POLICY = FairMinded
