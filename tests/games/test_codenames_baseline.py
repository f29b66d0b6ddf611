"""The Codenames heuristic baseline beats random play (paired sign test over seeds, p < 0.01,
and the exact 99% interval of its share of the decisive seeds above one half).

Each seed is played twice with the same board, key and opponents: once with the tested team
played by ``scripted:heuristic`` and once by ``scripted:random``; the sign test counts the seeds
where only one of the two won. Both teams, at 4 and at 6 players.
"""
import pytest

from baseline_support import (assert_interval_above, assert_plays_cleanly_through_the_runner,
                              assert_significantly_better, paired_side_counts)

GAME = "codenames"


@pytest.mark.parametrize("config", [{}, {"num_players": 6}])
def test_heuristic_dispatch_through_the_runner(config):
    assert_plays_cleanly_through_the_runner(GAME, config)


@pytest.mark.parametrize("side,config", [("red", {}), ("blue", {}), ("red", {"num_players": 6}),
                                         ("blue", {"num_players": 6})])
def test_heuristic_team_beats_random(side, config):
    better, worse = paired_side_counts(GAME, side, "scripted:random", range(30), config)
    assert_significantly_better(better, worse, alpha=0.01)
    assert_interval_above(better, worse, level=0.99)
