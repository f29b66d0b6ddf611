"""The spyfall heuristic baseline beats random play (role-balanced, sign test p < 0.01)."""
import pytest

from baseline_support import assert_role_balanced_heuristic_beats_random

GAME, SEEDS = "spyfall", 40


@pytest.mark.parametrize("config", [{}, {"spy_can_guess": True}])
def test_heuristic_beats_random(config):
    assert_role_balanced_heuristic_beats_random(GAME, range(SEEDS), config, alpha=0.01)
