"""Shared fixtures of the agents tests: a scripted fake chat backend (the embedded SmolLM2 fixture
lives in tests/conftest.py)."""
import pytest

from agents.llm.backend import Reply
from agents.llm.config import LLMConfig
from agents.llm.policy import LLMPolicy


class FakeBackend:
    """Answers from a list of replies (or a function of the messages); records every call."""

    kind = "fake"
    model_name = "fake-model"

    def __init__(self, replies=None, fn=None, budget_chars=0):
        self.replies = list(replies or [])
        self.fn = fn
        self.calls = []          # one list of Completions per complete() call
        self.released = []
        self.budget_chars = budget_chars

    def fits(self, messages, share=1.0):
        return not self.budget_chars or sum(len(m["content"]) for m in messages) <= self.budget_chars * share

    def release(self, key):
        self.released.append(key)

    def complete(self, items):
        self.calls.append(list(items))
        out = []
        for item in items:
            if self.fn is not None:
                out.append(self.fn(item))
            else:
                reply = self.replies.pop(0) if self.replies else '{"action_type": "?"}'
                out.append(reply if isinstance(reply, BaseException) else Reply(reply, {"new_tokens": 1}))
        return out


def fake_policy(replies=None, fn=None, policy_id="fake", **options):
    config = LLMConfig(**options)
    return LLMPolicy(FakeBackend(replies, fn), config, policy_id)


@pytest.fixture
def make_fake_policy():
    return fake_policy



@pytest.fixture(autouse=True)
def fresh_server_ladders():
    """Each test's scripted servers start unknown: a port reused by a later test's server must
    not inherit what the ladder learnt about an earlier one (the ladder is per process)."""
    from agents.llm import openai_backend
    openai_backend._LADDERS.clear()
    yield
