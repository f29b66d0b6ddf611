"""Heuristic for stag hunt: tit-for-tat (nice first, then mirror the others' last round)."""
from ..scripted import TitForTat


class Heuristic(TitForTat):
    policy_id = "scripted:heuristic:stag_hunt"


POLICY = Heuristic
