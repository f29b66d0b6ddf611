"""The example game's own tests: its rules, and Social Gym's conformance checks in one line."""
import socialgym_env
from socialgym_env.testing import check_game
from socialgym_example_game.lowest_unique_bid import round_winner


def test_conformance():
    check_game("lowest_unique_bid")


def test_lowest_unique_bid_scores():
    assert round_winner({"player_0": 2, "player_1": 1, "player_2": 1}) == "player_0"
    assert round_winner({"player_0": 3, "player_1": 3, "player_2": 3}) is None


def test_a_round_through_the_env():
    env = socialgym_env.make("lowest_unique_bid", rounds=1, invalid_action="raise")
    env.reset(seed=0)
    for move in ("bid 4", "bid 2", "bid 4"):
        env.step(move)
    assert env.state.scores == {"player_0": 0.0, "player_1": 1.0, "player_2": 0.0}
