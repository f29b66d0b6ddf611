"""Rule tests for Kuhn poker: every betting sequence of every deal, played through the env."""
import itertools

import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError

from helpers import play

P0, P1 = "player_0", "player_1"
RANKS = "JQK"
# player_0's chips for each complete betting sequence, given who holds the higher card
# (+1 when player_0 does); folds do not depend on the cards.
SEQUENCES = {("check", "check"): 1, ("bet", "call"): 2, ("bet", "fold"): None,
             ("check", "bet", "call"): 2, ("check", "bet", "fold"): None}
FOLD_CHIPS = {("bet", "fold"): 1, ("check", "bet", "fold"): -1}


@pytest.mark.parametrize("deal", ["".join(p) for p in itertools.permutations(RANKS, 2)])
@pytest.mark.parametrize("moves", list(SEQUENCES))
def test_every_sequence_of_every_deal_pays_the_right_chips(deal, moves):
    env = play("kuhn_poker", list(moves), deal=deal)
    result = env.state.result
    assert result is not None and not result.truncated
    higher = 1 if RANKS.index(deal[0]) > RANKS.index(deal[1]) else -1
    chips = FOLD_CHIPS[moves] if SEQUENCES[moves] is None else SEQUENCES[moves] * higher
    assert result.scores == {P0: chips, P1: -chips}
    assert result.rewards == {P0: float(chips > 0) - float(chips < 0), P1: float(chips < 0) - float(chips > 0)}
    shown = any("Showdown" in line for line in env.episode_record()["transcript"])
    assert shown == (SEQUENCES[moves] is not None)          # a fold shows no cards


def test_turn_order_and_legal_actions():
    env = play("kuhn_poker", [], deal="KQ")
    assert env.agent_selection == P0 and env.infos[P0]["legal_action_list"] == ["check", "bet"]
    env.step("check")
    assert env.agent_selection == P1 and env.infos[P1]["legal_action_list"] == ["check", "bet"]
    env.step("bet")
    assert env.agent_selection == P0 and env.infos[P0]["legal_action_list"] == ["call", "fold"]   # no raise
    with pytest.raises(InvalidActionError):
        env.step("raise")


def test_cards_are_private_until_the_showdown():
    env = play("kuhn_poker", ["bet"], deal="JK")
    for agent, own, other in ((P0, "J", "K"), (P1, "K", "J")):
        text = env.observe(agent)["text"]
        assert f"Your card: {own}." in text and f"Your card: {other}." not in text
        assert f"shows {other}" not in text
        assert env.decision_view(agent)["game_state"]["my_card"] == own
    env.step("call")
    assert "shows J" in env.observe(P1)["text"] and "shows K" in env.observe(P0)["text"]


def test_shuffled_deals_use_two_distinct_cards_of_the_deck():
    seen = set()
    for seed in range(30):
        env = socialgym_env.make("kuhn_poker")
        env.reset(seed=seed)
        cards = env.state.g.cards
        assert cards[P0] != cards[P1] and {cards[P0], cards[P1]} <= set(RANKS)
        seen.add((cards[P0], cards[P1]))
    assert len(seen) == 6


def test_fallback_checks_or_folds():
    env = socialgym_env.make("kuhn_poker", deal="QK")
    env.reset(seed=0)
    env.step("raise")                       # no such action in Kuhn: the fallback checks
    assert env.state.g.history == [["check"]]
    env.step("bet")
    env.step("nonsense")                    # facing the bet: the fallback folds
    assert env.state.g.history == [["check", "bet", "fold"]]
    assert env.state.result.scores == {P0: -1, P1: 1}


@pytest.mark.parametrize("deal", ["K", "KK", "KQJ", "AK"])
def test_bad_deals_are_refused(deal):
    with pytest.raises(ConfigError, match="deal"):
        socialgym_env.make("kuhn_poker", deal=deal)
