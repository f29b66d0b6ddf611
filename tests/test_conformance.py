"""Registry-wide checks (OpenSpiel style): every registered game passes PettingZoo's API and
seed tests, simultaneous games the parallel API test, and random play mixed with junk ends
within the cap, pays rewards in {-1, 0, 1} and logs byte-identically for the same seed."""
import json
import warnings

import pytest
from pettingzoo.test import api_test, parallel_api_test, seed_test
from pettingzoo.utils.conversions import aec_to_parallel

import socialgym_env

from helpers import random_junk_episode

GAMES = socialgym_env.game_ids()
JUNK = ["", "   ", "eyes", "vote", "{\"action_type\": 3}", "{broken", "contribute -1", "ßüñ ✓ 🙂",
        "pass pass pass", "say " + "x" * 5000]
EPISODES = 6


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test warns that text spaces are not Box/Discrete
        yield


@pytest.mark.parametrize("game_id", GAMES)
def test_pettingzoo_api(game_id):
    api_test(socialgym_env.make(game_id), num_cycles=60)


@pytest.mark.parametrize("game_id", GAMES)
def test_pettingzoo_seed(game_id):
    seed_test(lambda: socialgym_env.make(game_id), num_cycles=20)


@pytest.mark.parametrize("game_id", [g for g in GAMES if socialgym_env.game_class(g).info.simultaneous])
def test_pettingzoo_parallel_api(game_id):
    parallel_api_test(aec_to_parallel(socialgym_env.make(game_id)), num_cycles=60)


def random_episode(game_id: str, seed: int) -> tuple[dict, str]:
    """Random legal actions mixed with ~20% junk, both drawn from a seeded RNG."""
    record = random_junk_episode(game_id, seed, JUNK).episode_record()
    return record, json.dumps(record, ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize("game_id", GAMES)
def test_random_simulation(game_id):
    info = socialgym_env.game_class(game_id).info
    for seed in range(EPISODES):
        record, _ = random_episode(game_id, seed)
        assert record["finished"], f"{game_id} seed {seed} did not finish"
        assert record["steps"] <= info.max_steps
        assert set(record["rewards"].values()) <= {-1.0, 0.0, 1.0}
        assert set(record["outcomes"].values()) <= {"win", "draw", "loss"}
        assert all(isinstance(t["valid"], bool) for t in record["turns"])
    _, first = random_episode(game_id, 123)
    _, again = random_episode(game_id, 123)
    assert first == again


def test_catalogue_metadata_is_complete():
    catalogue = socialgym_env.list_games()
    assert [g["id"] for g in catalogue] == GAMES
    for game in catalogue:
        assert game["name"] and game["skills"] and game["max_steps"] > 0
        module = socialgym_env.game_class(game["id"])
        doc = __import__(module.__module__, fromlist=["x"]).__doc__
        assert doc and "Create" in doc, f"{game['id']} module docstring lacks the usage section"
