"""Test doubles for SPaRTan: a playbook-following Prisoner's Dilemma policy and a prompt-recording
fake chat model, registered as policy spec kinds (``follower``, ``spartanfake``)."""
from __future__ import annotations

import random

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.config import parse_options
from socialgym_agents.llm.policy import LLMPolicy
from socialgym_agents.registry import register_kind

PLANTED = "A pattern I noticed: I should cooperate early and defect in the last round."


class Follower(BasePolicy):
    """PD: random moves (15% defect) before the last round; in the last round it defects if its
    playbook says "defect in the last round", else it cooperates."""

    policy_id = "follower"

    def __init__(self, seed=0):
        super().__init__(seed)
        self.playbooks = {}

    def reset(self, key, seed=None):
        # seeded by the game seed and seat only (not the episode id): a baseline and a placebo
        # game with the same seed make the same random moves (common random numbers)
        self._rngs[key] = random.Random(f"{seed}|{key[1]}")

    def set_playbook(self, key, text):
        self.playbooks[key] = text

    def release(self, key):
        super().release(key)
        self.playbooks.pop(key, None)

    def act(self, observation, info, key=("", "")):
        state = info["game_state"]
        if state["round"] == state["rounds"]:
            told = "defect in the last round" in (self.playbooks.get(key) or "")
            return Decision("defect" if told else "cooperate")
        return Decision("defect" if self.rng(key).random() < 0.15 else "cooperate")


class RecordingBackend:
    """A chat backend that remembers every request's messages by seat and answers junk (the env
    falls back)."""

    kind = "fake"
    model_name = "spartanfake"
    prompts: dict = {}

    def fits(self, messages, share=1.0):
        return True

    def release(self, key):
        pass

    def complete(self, items):
        for item in items:
            # the whole chat: the seat's first user message carries the playbook slot
            RecordingBackend.prompts.setdefault(item.key, []).append([m["content"] for m in item.messages])
        return [Reply("no idea") for _ in items]


def _fake(spec, seed=0):
    return LLMPolicy(RecordingBackend(), parse_options(spec.options, seed=seed), f"spartanfake:{spec.name}")


register_kind("follower", lambda spec, seed=0: Follower(seed=seed))
register_kind("spartanfake", _fake)
