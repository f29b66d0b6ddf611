"""Rule tests for Public Goods, Centipede and Bargaining."""
import pytest

from helpers import play
from socialgym_env.games.centipede import centipede_payoff
from socialgym_env.games.public_goods import public_goods_payoffs


def test_public_goods_payoffs_exact():
    # contributions [10, 0, 5, 5]: pot 20 * 1.5 / 4 = 7.5 each
    pay = public_goods_payoffs({"a": 10, "b": 0, "c": 5, "d": 5})
    assert pay == {"a": 7.5, "b": 17.5, "c": 12.5, "d": 12.5}
    env = play("public_goods", ["contribute 10", "contribute 0", "contribute 5", "contribute 5"], rounds=1)
    assert env.state.scores == {"player_0": 7.5, "player_1": 17.5, "player_2": 12.5, "player_3": 12.5}
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0, "player_2": 0.0, "player_3": 0.0}
    assert env.episode_record()["metrics"]["coordination"] == pytest.approx(20 / 40)


def test_public_goods_contributions_are_private_until_the_round_ends():
    env = play("public_goods", ["contribute 7"], rounds=1)
    for agent in ("player_1", "player_2", "player_3"):
        assert "7" not in " ".join(m.text for m in env.state.visible_to(agent))
    assert env.turns[0]["action"] == "contribute 7"


def test_public_goods_out_of_range_is_invalid_and_falls_back_to_zero():
    env = play("public_goods", [], rounds=1)
    env.config["invalid_action"] = "fallback"
    env.step("contribute 11")
    assert env.turns[-1]["reason"] == "N must be from 0 to 10 (got 11)"
    assert env.turns[-1]["action"] == "contribute 0"


@pytest.mark.parametrize("node,expected", [(1, (2, 0)), (2, (1, 4)), (3, (6, 2)), (4, (5, 10)),
                                           (5, (14, 8)), (6, (13, 24))])
def test_centipede_take_payoffs(node, expected):
    assert centipede_payoff(node, "take") == expected


def test_centipede_pass_at_last_node_and_pass_elsewhere():
    assert centipede_payoff(6, "pass") == (24, 16)
    assert centipede_payoff(3, "pass") is None


def test_centipede_take_at_node_two_pays_first_mover_then_second_mover():
    # sub-game 1: player_0 first; pass, then player_1 takes at node 2 -> (first 1, second 4)
    env = play("centipede", ["pass", "take"], subgames=1)
    assert env.state.scores == {"player_0": 1.0, "player_1": 4.0}
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}


def test_centipede_first_mover_alternates_between_subgames():
    # sub-game 1 (player_0 first): take at node 1 -> p0 2, p1 0
    # sub-game 2 (player_1 first): take at node 1 -> p1 2, p0 0
    env = play("centipede", ["take"], subgames=2)
    assert env.agent_selection == "player_1"
    env.step("take")
    assert env.state.scores == {"player_0": 2.0, "player_1": 2.0}
    # full traversal: pass x6 with p0 first mover
    env = play("centipede", ["pass"] * 6, subgames=1)
    assert [t["agent"] for t in env.turns] == ["player_0", "player_1"] * 3
    assert env.state.scores == {"player_0": 24.0, "player_1": 16.0}


def test_bargaining_accept_and_reject():
    env = play("bargaining", ["propose 7", "accept"], rounds=1)
    assert env.state.scores == {"player_0": 7.0, "player_1": 3.0}
    n0, n1 = env.state.name("player_0"), env.state.name("player_1")
    lines = env.episode_record()["transcript"]
    assert f"[R1 propose] Moderator: Round 1: {n0} proposes to keep 7 and give 3 to {n1}." in lines
    assert f"[R1 respond] Moderator: {n1} accepts: {n0} 7, {n1} 3." in lines
    env = play("bargaining", ["propose 7", "reject"], rounds=1)
    assert env.state.scores == {"player_0": 0.0, "player_1": 0.0}


def test_bargaining_proposer_alternates_and_prompt_says_n_is_kept():
    env = play("bargaining", ["propose 7", "accept"], rounds=2)
    assert env.agent_selection == "player_1"
    assert "N is how many of the 10 coins YOU keep" in env.observe("player_1")["text"]
    env.step("propose 10")
    env.step("accept")
    assert env.state.scores == {"player_0": 7.0, "player_1": 13.0}
