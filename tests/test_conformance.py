"""Registry-wide checks (OpenSpiel style): every registered game passes PettingZoo's API and
seed tests, simultaneous games the parallel API test, and random play mixed with junk ends
within the cap, pays rewards in {-1, 0, 1} and logs byte-identically for the same seed. The
checks are the public ``socialgym_env.testing`` helpers an outside game's tests call too."""
import pytest

import socialgym_env
from socialgym_env import testing

GAMES = socialgym_env.game_ids()


@pytest.mark.parametrize("game_id", GAMES)
def test_pettingzoo_api(game_id):
    testing.check_api(game_id)


@pytest.mark.parametrize("game_id", GAMES)
def test_pettingzoo_seed(game_id):
    testing.check_seed(game_id)


@pytest.mark.parametrize("game_id", [g for g in GAMES if socialgym_env.game_class(g).info.simultaneous])
def test_pettingzoo_parallel_api(game_id):
    testing.check_parallel_api(game_id)


@pytest.mark.parametrize("game_id", GAMES)
def test_random_simulation(game_id):
    testing.check_random_play(game_id, episodes=6)
    testing.check_determinism(game_id, seed=123)


def test_catalogue_metadata_is_complete():
    catalogue = socialgym_env.list_games()
    assert [g["id"] for g in catalogue] == GAMES
    for game in catalogue:
        assert game["name"] and game["skills"] and game["max_steps"] > 0
        module = socialgym_env.game_class(game["id"])
        doc = __import__(module.__module__, fromlist=["x"]).__doc__
        assert doc and "Create" in doc, f"{game['id']} module docstring lacks the usage section"
