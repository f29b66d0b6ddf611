"""The Kuhn and Leduc poker baselines, measured exactly through the OpenSpiel bridge: the Kuhn
baseline is an equilibrium (exploitability 0, value -1/18 for player_0), both win chips from
uniform random play in either seat, and both play cleanly through the runner."""
import pytest

from socialgym_agents import openspiel_bridge as bridge
from socialgym_agents.baselines import kuhn_poker, leduc_poker

from baseline_support import assert_plays_cleanly_through_the_runner

STRATEGIES = {"kuhn_poker": kuhn_poker.action_probabilities, "leduc_poker": leduc_poker.action_probabilities}


def test_kuhn_baseline_is_an_equilibrium():
    strategy = bridge.from_strategy(kuhn_poker.action_probabilities)
    assert bridge.exploitability("kuhn_poker", strategy) == pytest.approx(0.0, abs=1e-12)
    value = bridge.expected_chips("kuhn_poker", strategy, strategy)
    assert value == pytest.approx([-1 / 18, 1 / 18], abs=1e-12)


def test_kuhn_baseline_plays_what_it_declares():
    """The sampled moves of the BasePolicy follow action_probabilities (a wrong draw would move
    the estimated exploitability far from 0)."""
    sampled = bridge.from_sampling(kuhn_poker.KuhnPokerBaseline(seed=0), samples=400)
    assert bridge.exploitability("kuhn_poker", sampled) < 0.05
    assert bridge.exploitability("kuhn_poker", bridge.uniform) > 0.4


def test_leduc_baseline_is_exploitable_but_beats_random():
    strategy = bridge.from_strategy(leduc_poker.action_probabilities)
    assert 0.0 < bridge.exploitability("leduc_poker", strategy) < bridge.exploitability("leduc_poker", bridge.uniform)


@pytest.mark.parametrize("game_id", list(STRATEGIES))
def test_baseline_wins_chips_from_random_in_both_seats(game_id):
    strategy = bridge.from_strategy(STRATEGIES[game_id])
    as_first = bridge.expected_chips(game_id, strategy, bridge.uniform)[0]
    as_second = bridge.expected_chips(game_id, bridge.uniform, strategy)[1]
    assert as_first > 0.1 and as_second > 0.1, (as_first, as_second)


@pytest.mark.parametrize("game_id", list(STRATEGIES))
def test_baseline_plays_cleanly_through_the_runner(game_id):
    assert_plays_cleanly_through_the_runner(game_id)
