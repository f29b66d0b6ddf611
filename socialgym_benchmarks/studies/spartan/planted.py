"""Scripted students for the planted-effect and null checks of SPaRTan's statistics.

Registered as policy specs (importing :mod:`socialgym_benchmarks.studies.spartan` registers them):

| spec                | what it does with its playbook                                              |
|---------------------|-----------------------------------------------------------------------------|
| ``planted:keyword`` | reads it: in the last round of an iterated 2x2 game it plays the nasty move |
|                     | when the playbook contains :data:`KEYWORD`, else the nice move (a real      |
|                     | effect, which the paired test must find)                                    |
| ``planted:noise``   | reads it without using it: its random stream is seeded with the playbook's |
|                     | text too, so arms replay differently but with the same distribution (a     |
|                     | true null that is not a byte-identical replay, which the test must reject  |
|                     | at no more than its nominal rate)                                           |

Before the last round both play the nice move, with a 5% nasty move drawn from the seat's
random stream (``socialgym_agents.base.seat_seed``: game, seed, seat). A playbook-blind student needs no
class of its own: ``scripted:random`` and ``scripted:heuristic`` ignore playbooks, and common
random numbers make their arms replay identically.
"""
from __future__ import annotations

import hashlib
import random

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.registry import register_kind
from socialgym_agents.scripted import NICE_NASTY, sample_from_info

KEYWORD = "defect in the last round"
NASTY_EARLY = 0.05


class _PlaybookStudent(BasePolicy):
    instant = True

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.playbooks: dict = {}

    def set_playbook(self, key, text) -> None:
        if text:
            self.playbooks[key] = text
        else:
            self.playbooks.pop(key, None)

    def release(self, key) -> None:
        super().release(key)
        self.playbooks.pop(key, None)

    def last_round_nasty(self, key) -> bool:
        raise NotImplementedError

    def act(self, observation, info, key=("", "")):
        pair = NICE_NASTY.get(info.get("game"))
        state = info.get("game_state") or {}
        if pair is None or "round" not in state:
            return Decision(sample_from_info(info, self.rng(key)))
        nice, nasty = pair
        if state["round"] == state.get("rounds"):
            return Decision(nasty if self.last_round_nasty(key) else nice)
        return Decision(nasty if self.rng(key).random() < NASTY_EARLY else nice)


class KeywordStudent(_PlaybookStudent):
    policy_id = "planted:keyword"

    def last_round_nasty(self, key) -> bool:
        return KEYWORD in (self.playbooks.get(key) or "")


class NoiseStudent(_PlaybookStudent):
    policy_id = "planted:noise"

    def set_playbook(self, key, text) -> None:
        super().set_playbook(key, text)
        # the stream the runner seeded, re-seeded with the playbook: same law, other draws
        digest = hashlib.sha256((text or "").encode()).hexdigest()[:16]
        self._rngs[key] = random.Random(f"{self.rng(key).random()}|{digest}")

    def last_round_nasty(self, key) -> bool:
        return self.rng(key).random() < 0.5


STUDENTS = {"keyword": KeywordStudent, "noise": NoiseStudent}


def _make(spec, seed: int = 0):
    if spec.name not in STUDENTS or spec.options:
        raise ValueError(f"unknown planted student {str(spec)!r}; valid: {', '.join('planted:' + k for k in STUDENTS)}")
    return STUDENTS[spec.name](seed=seed)


register_kind("planted", _make)
