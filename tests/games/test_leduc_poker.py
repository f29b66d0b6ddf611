"""Rule tests for Leduc poker: bet sizes, the raise cap, the board card, showdowns and folds."""
import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError

from helpers import play

P0, P1 = "player_0", "player_1"


def legal(env):
    return env.infos[env.agent_selection]["legal_action_list"]


def test_round_one_bets_two_and_caps_at_one_raise():
    env = play("leduc_poker", [], deal="KQJ")
    assert legal(env) == ["check", "bet"]
    env.step("bet")
    assert env.state.g.put_in == {P0: 3, P1: 1} and legal(env) == ["call", "fold", "raise"]
    env.step("raise")
    assert env.state.g.put_in == {P0: 3, P1: 5} and legal(env) == ["call", "fold"]    # two bets: capped
    with pytest.raises(InvalidActionError):
        env.step("raise")
    env.step("call")
    assert env.state.g.put_in == {P0: 5, P1: 5}
    assert env.state.g.board == ["J"] and env.state.round == 2 and env.agent_selection == P0


def test_round_two_bets_four_and_player_0_opens_it():
    env = play("leduc_poker", ["check", "check", "check", "bet"], deal="KQJ")
    assert env.agent_selection == P0 and env.state.g.put_in == {P0: 1, P1: 5}
    env.step("raise")
    assert env.state.g.put_in == {P0: 9, P1: 5}
    env.step("call")
    assert env.state.result.scores == {P0: 9, P1: -9}      # K beats Q without a pair


@pytest.mark.parametrize("deal, chips", [("JQJ", 1), ("QJJ", -1), ("KQQ", -1), ("KQJ", 1), ("KKQ", 0),
                                         ("JJK", 0), ("QKJ", -1)])
def test_showdown_pair_beats_high_card_and_equal_ranks_split(deal, chips):
    env = play("leduc_poker", ["check"] * 4, deal=deal)
    assert env.state.result.scores == {P0: chips, P1: -chips}
    assert env.state.result.rewards[P0] == float(chips > 0) - float(chips < 0)
    if chips == 0:
        assert "split" in env.state.result.reason


def test_largest_pot_is_thirteen_chips_each():
    env = play("leduc_poker", ["bet", "raise", "call", "bet", "raise", "call"], deal="QKQ")
    assert env.state.result.scores == {P0: 13, P1: -13}


def test_fold_in_round_two_pays_what_the_folder_put_in():
    env = play("leduc_poker", ["bet", "call", "bet", "fold"], deal="JKQ")
    assert env.state.result.scores == {P0: 3, P1: -3}
    assert not any("Showdown" in line for line in env.episode_record()["transcript"])


def test_board_card_is_hidden_until_round_two_and_then_public():
    env = play("leduc_poker", ["check"], deal="KQJ")
    for agent in env.agents:
        assert "Board card: not dealt yet." in env.observe(agent)["text"]
        assert env.decision_view(agent)["game_state"]["board"] == []
    env.step("check")
    for agent in env.agents:
        assert "The board card is J." in env.observe(agent)["text"]
        assert env.decision_view(agent)["game_state"]["board"] == ["J"]
    assert "Your card: Q." not in env.observe(P0)["text"]


def test_shuffled_deals_draw_from_two_suits():
    pairs = 0
    for seed in range(60):
        env = socialgym_env.make("leduc_poker")
        env.reset(seed=seed)
        g = env.state.g
        dealt = [g.cards[P0], g.cards[P1]] + g.board_pending
        assert all(dealt.count(r) <= 2 for r in "JQK")
        pairs += g.cards[P0] == g.cards[P1]
    assert 0 < pairs < 60          # the same rank twice happens (two suits), never three times


@pytest.mark.parametrize("deal", ["KQ", "KKK", "KQJJ", "KQX"])
def test_bad_deals_are_refused(deal):
    with pytest.raises(ConfigError, match="deal"):
        socialgym_env.make("leduc_poker", deal=deal)
