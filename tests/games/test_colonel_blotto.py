"""Rule tests for Colonel Blotto: per-field majority with ties to nobody, the winner-take-all
outcome, blind allocations, rounds and talk, and every joint allocation of small configurations
against OpenSpiel's ``blotto``."""
import itertools

import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError
from socialgym_env.games.colonel_blotto import allocation_reason, blotto_winners, field_winners, fields_won
from socialgym_env.testing import check_game

from helpers import play

P0, P1, P2 = "player_0", "player_1", "player_2"


def test_a_field_goes_to_the_strict_majority_and_a_tie_to_nobody():
    owners = field_winners({P0: (5, 5, 0), P1: (5, 3, 2), P2: (0, 2, 8)})
    assert owners == [None, P0, P2]
    assert fields_won(owners, [P0, P1, P2]) == {P0: 1, P1: 0, P2: 1}
    assert blotto_winners({P0: 1, P1: 0, P2: 1}) == [P0, P2]
    assert blotto_winners({P0: 1, P1: 1, P2: 1}) == []
    assert allocation_reason((4, 3, 3), 10) is None
    assert allocation_reason((4, 3, 2), 10) == "the troops must sum to 10 (got 9)"


@pytest.mark.parametrize("first, second, rewards", [
    ("allocate 5 5 0", "allocate 3 3 4", (1.0, -1.0)),       # two fields to one
    ("allocate 0 0 10", "allocate 4 3 3", (-1.0, 1.0)),
    ("allocate 4 3 3", "allocate 4 3 3", (0.0, 0.0)),         # every field tied: nobody wins one
    ("allocate 5 5 0", "allocate 5 0 5", (0.0, 0.0)),         # one field each, one tied
])
def test_two_player_outcomes(first, second, rewards):
    env = play("colonel_blotto", [first, second])
    result = env.state.result
    assert (result.rewards[P0], result.rewards[P1]) == rewards and not result.truncated
    assert set(env.state.g.history[0]["allocations"]) == {P0, P1}


def test_legal_allocations_are_every_split_of_the_troops():
    env = play("colonel_blotto", [])
    legal = env.infos[P0]["legal_action_list"]
    splits = [tuple(map(int, text.split()[1:])) for text in legal]
    assert len(legal) == 66 and len(set(splits)) == 66            # C(12, 2) ways to split 10 over 3
    assert all(sum(s) == 10 and len(s) == 3 and min(s) >= 0 for s in splits)
    for bad in ("allocate 5 5 1", "allocate 5 5", "allocate 10 0 0 0", "allocate -1 6 5", "allocate 11 0 -1"):
        with pytest.raises(InvalidActionError):
            play("colonel_blotto", []).step(bad)


def test_grammar_and_schema_state_the_sum():
    env = play("colonel_blotto", [], troops=7, fields=4)
    info = env.infos[P0]
    branch, = info["action_schema"]["oneOf"]
    argument = branch["properties"]["argument"]
    assert argument["x-sum"] == 7 and argument["minItems"] == argument["maxItems"] == 4
    assert "summing to 7" in env.observe(P0)["text"]
    assert env.grammar(P0).parse('{"action_type": "allocate", "argument": [1, 2, 3, 1]}').values == (1, 2, 3, 1)


def test_a_large_configuration_has_a_schema_and_samples_legal_splits():
    env = play("colonel_blotto", [], troops=40, fields=6)
    assert env.infos[P0].get("legal_action_list") is None      # 41^6 combinations: not listed
    sample = env.grammar(P0).sample(env.state.rng)
    assert sum(sample.values) == 40 and len(sample.values) == 6


def test_allocations_stay_hidden_until_everyone_has_allocated():
    env = play("colonel_blotto", ["allocate 7 2 1"])
    assert "7 2 1" not in env.observe(P1)["text"]
    assert env.decision_view(P1)["game_state"]["history"] == []
    env.step("allocate 1 1 8")
    for agent in (P0, P1):
        assert "7 2 1" in env.observe(agent)["text"] and "1 1 8" in env.observe(agent)["text"]


def test_three_players_two_leaders_both_win():
    env = play("colonel_blotto", ["allocate 6 4 0", "allocate 0 5 5", "allocate 5 0 5"], num_players=3)
    # field 1: P0 (6), field 2: P1 (5), field 3: tie 5-5 between P1 and P2 -> nobody
    assert env.state.result.scores == {P0: 1, P1: 1, P2: 0}
    assert env.state.result.rewards == {P0: 1.0, P1: 1.0, P2: -1.0}


def test_rounds_add_up_fields_and_talk_comes_before_every_allocation():
    env = play("colonel_blotto", [], rounds=2, talk_rounds=1)
    assert not env.game_info.simultaneous and env.game_info.communication == "free_form"
    assert socialgym_env.game_class("colonel_blotto").info.simultaneous       # the default config is
    for move in ("say I go heavy on field 1.", "pass", "allocate 10 0 0", "allocate 0 5 5",
                 "pass", "pass"):
        assert env.state.phase in ("talk", "allocate")
        env.step(move)
    assert env.state.phase == "allocate" and env.state.round == 2
    env.step("allocate 5 5 0")
    env.step("allocate 0 0 10")
    result = env.state.result               # 1 + 2 fields against 2 + 1: a draw over the rounds
    assert result.scores == {P0: 3, P1: 3} and result.rewards == {P0: 0.0, P1: 0.0}
    assert "I go heavy on field 1." in env.observe(P1)["text"]


def test_the_rules_text_states_the_configured_numbers():
    env = play("colonel_blotto", [], num_players=4, troops=13, fields=5, rounds=3, talk_rounds=2)
    text = env.observe(P0)["text"]
    for phrase in ("4 players", "13 troops", "5 battlefields", "3 round(s)", "2 round(s) of public talk"):
        assert phrase in text


def test_invalid_allocation_falls_back_to_a_random_legal_one():
    env = socialgym_env.make("colonel_blotto")
    env.reset(seed=4)
    env.step("allocate 9 9 9")
    env.step("allocate 2 2 6")
    turn = env.turns[0]
    assert not turn["valid"] and turn.get("fallback")
    played = env.state.g.history[0]["allocations"][P0]
    assert sum(played) == 10 and len(played) == 3


@pytest.mark.parametrize("config", [{"troops": 0}, {"troops": "ten"}, {"fields": 1}, {"num_players": 7}, {"talk_rounds": 6}])
def test_bad_configs_are_refused(config):
    with pytest.raises(ConfigError):
        socialgym_env.make("colonel_blotto", **config)


def test_conformance_with_three_players_rounds_and_talk():
    check_game("colonel_blotto", num_players=3, rounds=2, talk_rounds=1, troops=5)


# ------------------------------------------------------------------ OpenSpiel's blotto
def _openspiel_returns(pyspiel, players, troops, fields):
    """{joint allocation: returns} over every joint action of OpenSpiel's blotto."""
    game = pyspiel.load_game("blotto", {"players": players, "coins": troops, "fields": fields})
    root = game.new_initial_state()
    actions = root.legal_actions(0)
    names = {a: tuple(int(x) for x in root.action_to_string(0, a).strip("[]").split(",")) for a in actions}
    table = {}
    for joint in itertools.product(actions, repeat=players):
        state = root.clone()
        state.apply_actions(list(joint))
        assert state.is_terminal()
        table[tuple(names[a] for a in joint)] = state.returns()
    return table


@pytest.mark.parametrize("players, troops, fields", [(2, 10, 3), (3, 4, 3), (2, 5, 4)])
def test_every_joint_allocation_matches_openspiel(players, troops, fields):
    """Every allocation profile: with two players our rewards equal OpenSpiel's returns; with
    more, OpenSpiel's zero-sum split of our winners (+1/w each, -1/(n-w) each loser) equals its
    returns, and our rewards are their signs."""
    pyspiel = pytest.importorskip("pyspiel")
    table = _openspiel_returns(pyspiel, players, troops, fields)
    assert len(table) == len(set(allocs for allocs in table)) and len(table) > 1000
    env = socialgym_env.make("colonel_blotto", invalid_action="raise", num_players=players, troops=troops,
                             fields=fields, log_observations=False)
    agents = [f"player_{i}" for i in range(players)]
    for profile, returns in table.items():
        env.reset(seed=0)
        for allocation in profile:
            env.step("allocate " + " ".join(map(str, allocation)))
        result = env.state.result
        rewards = [result.rewards[a] for a in agents]
        if players == 2:
            assert rewards == pytest.approx(returns), profile
        winners = set(result.winners)
        shares = [0.0] * players if not winners else [
            1 / len(winners) if a in winners else -1 / (players - len(winners)) for a in agents]
        assert shares == pytest.approx(returns), profile
        assert rewards == [float((r > 0) - (r < 0)) for r in returns], profile
