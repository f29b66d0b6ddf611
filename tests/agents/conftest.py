"""Shared fixtures of the agents tests: a scripted fake chat backend (:mod:`helpers`; the embedded
SmolLM2 fixture lives in tests/conftest.py)."""
import pytest

from helpers import FakeBackend, fake_policy  # noqa: F401  (tests import them from helpers)


@pytest.fixture
def make_fake_policy():
    return fake_policy



@pytest.fixture(autouse=True)
def fresh_server_ladders():
    """Each test's scripted servers start unknown: a port reused by a later test's server must
    not inherit what the ladder learnt about an earlier one (the ladder is per process)."""
    from socialgym_agents.llm import openai_backend
    openai_backend._LADDERS.clear()
    yield
