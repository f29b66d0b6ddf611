"""Rule tests for the six normal-form games: scripted moves, exact payoffs and transcript lines."""
import pytest

from helpers import play
from socialgym_env.games.battle_of_the_sexes import bos_payoffs
from socialgym_env.games.minority_game import minority_payoffs
from socialgym_env.games.rock_paper_scissors import rps_payoff
from socialgym_env.games.stag_hunt import stag_hunt_payoffs


@pytest.mark.parametrize("a,b,expected", [
    ("cooperate", "cooperate", (3, 3)), ("cooperate", "defect", (0, 5)),
    ("defect", "cooperate", (5, 0)), ("defect", "defect", (1, 1)),
])
def test_prisoners_dilemma_payoffs(a, b, expected):
    env = play("prisoners_dilemma", [a, b], rounds=1)
    assert (env.state.scores["player_0"], env.state.scores["player_1"]) == expected
    n0, n1 = env.state.name("player_0"), env.state.name("player_1")
    assert f"[R1 move] Moderator: Round 1 moves — {n0}: {a}, {n1}: {b}. Payoffs — {n0} {expected[0]}, {n1} {expected[1]}." \
        in env.episode_record()["transcript"]


def test_prisoners_dilemma_five_rounds_totals_and_outcome():
    moves = ["cooperate", "defect"] * 1 + ["defect", "defect"] * 3 + ["defect", "cooperate"]
    env = play("prisoners_dilemma", moves)
    # CD 0/5, DD x3 1/1, DC 5/0 -> 8 vs 8: a tie
    assert env.state.scores == {"player_0": 8.0, "player_1": 8.0}
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_0"]["outcome"] == "draw"
    assert all(env.terminations.values())


def test_prisoners_dilemma_moves_are_blind_until_both_chose():
    env = play("prisoners_dilemma", ["defect"])
    seen = env.observe("player_1")["text"].split("--- What you have seen ---")[1]
    assert "defect" not in seen.split("--- Now ---")[0]
    assert env.infos["player_1"]["new_messages"] == ["[R1] Moderator: The game starts: 5 rounds."]


@pytest.mark.parametrize("a,b,expected", [
    ("swerve", "swerve", (3, 3)), ("swerve", "straight", (1, 5)),
    ("straight", "swerve", (5, 1)), ("straight", "straight", (0, 0)),
])
def test_chicken_payoffs(a, b, expected):
    env = play("chicken", [a, b], rounds=1)
    assert (env.state.scores["player_0"], env.state.scores["player_1"]) == expected
    assert env.rewards["player_0"] == (expected[0] > expected[1]) - (expected[0] < expected[1])


def test_rock_paper_scissors_round_scores():
    assert rps_payoff("rock", "scissors") == (1, -1)
    assert rps_payoff("scissors", "rock") == (-1, 1)
    assert rps_payoff("paper", "paper") == (0, 0)
    env = play("rock_paper_scissors", ["rock", "scissors", "paper", "scissors", "rock", "rock"], rounds=3)
    assert env.state.scores == {"player_0": 0.0, "player_1": 0.0}
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}


def test_stag_hunt_payoffs_and_median_split_without_seat_order():
    assert stag_hunt_payoffs({"a": "stag", "b": "stag", "c": "stag", "d": "stag"}) == dict(a=5, b=5, c=5, d=5)
    assert stag_hunt_payoffs({"a": "stag", "b": "hare", "c": "stag", "d": "hare"}) == dict(a=0, b=2, c=0, d=2)
    env = play("stag_hunt", ["stag"] * 4, rounds=1)
    assert env.state.scores == {f"player_{i}": 5.0 for i in range(4)}
    assert set(env.rewards.values()) == {0.0}          # everyone equal: nobody wins on seat order
    assert env.episode_record()["metrics"] == {"coordination": 1.0}
    env = play("stag_hunt", ["stag", "hare", "hare", "stag"], rounds=1)
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0, "player_2": 1.0, "player_3": -1.0}


def test_minority_game_two_goers_earn_three_each():
    assert minority_payoffs({"a": "go", "b": "go", "c": "stay", "d": "stay", "e": "stay"}) == dict(a=3, b=3, c=0, d=0, e=0)
    assert minority_payoffs({k: "go" for k in "abcde"}) == {k: 0 for k in "abcde"}
    assert minority_payoffs({"a": "go", "b": "stay"}) == {"a": 0, "b": 0}  # equal sides: nobody
    env = play("minority_game", ["go", "stay", "go", "stay", "stay"], rounds=1)
    assert env.state.scores == {"player_0": 3.0, "player_1": 0.0, "player_2": 3.0, "player_3": 0.0, "player_4": 0.0}
    # median of (3, 0, 3, 0, 0) is 0: the stayers sit on the median and draw
    assert env.rewards == {"player_0": 1.0, "player_1": 0.0, "player_2": 1.0, "player_3": 0.0, "player_4": 0.0}


def test_battle_of_the_sexes_labels_preferences_and_talk_order():
    assert bos_payoffs("x", "x", "x", "y") == (3, 2)
    assert bos_payoffs("y", "y", "x", "y") == (2, 3)
    assert bos_payoffs("x", "y", "x", "y") == (0, 0)
    env = play("battle_of_the_sexes", [], seed=4, rounds=2)
    x, y = env.state.g.options
    assert x != y
    assert f"You prefer {x}" in env.observe("player_0")["text"]
    assert f"You prefer {y}" in env.observe("player_1")["text"]
    assert env.agent_selection == "player_0"            # round 1: seat 0 speaks first
    env.step("say Let's meet at " + x)
    env.step("pass")
    env.step(x)
    env.step(x)
    assert env.state.scores == {"player_0": 3.0, "player_1": 2.0}
    assert env.agent_selection == "player_1"            # round 2: seat 1 speaks first
    env.step("say Your turn to give in?")
    env.step("say Fine.")
    env.step(y)
    env.step(x)
    assert env.state.scores == {"player_0": 3.0, "player_1": 2.0}
    assert env.episode_record()["metrics"] == {"coordination": 0.5}
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}


def test_battle_of_the_sexes_labels_vary_by_seed_and_fallback_is_not_seat_zeros_option():
    pairs = {play("battle_of_the_sexes", [], seed=s, rounds=1).state.g.options for s in range(12)}
    assert len(pairs) > 3
    firsts = set()
    for seed in range(20):
        env = play("battle_of_the_sexes", [], seed=seed, rounds=1)
        env.config["invalid_action"] = "fallback"
        env.step("pass")
        env.step("pass")
        env.step("junk")
        firsts.add(env.turns[-1]["action"] == env.state.g.options[0])
    assert firsts == {True, False}   # the fallback is random, not seat 0's preferred option
