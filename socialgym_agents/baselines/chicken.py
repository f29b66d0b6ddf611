"""Heuristic for chicken: always ``straight``. The outcome compares the two totals, and
going straight never scores below the other driver (5-1 or 0-0). (tit_for_tat, grim_trigger and win_stay_lose_shift are the cooperative baselines.)"""
from ..base import BasePolicy, Decision


class Dominant(BasePolicy):
    policy_id = "scripted:heuristic:chicken"

    def act(self, observation, info, key=("", "")):
        return Decision("straight")


POLICY = Dominant
