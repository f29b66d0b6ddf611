"""Heuristic for prisoners dilemma: always ``defect``. The outcome compares the two totals, and
defecting is dominant: it never scores below the other player. (tit_for_tat, grim_trigger and win_stay_lose_shift are the cooperative baselines.)"""
from ..base import BasePolicy, Decision


class Dominant(BasePolicy):
    policy_id = "scripted:heuristic:prisoners_dilemma"

    def act(self, observation, info, key=("", "")):
        return Decision("defect")


POLICY = Dominant
