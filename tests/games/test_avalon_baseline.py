"""The Avalon heuristic baseline beats random play (paired sign test over seeds, p < 0.01,
and the exact 99% interval of its share of the decisive seeds above one half).

Each seed is played twice with the same deal and opponents: once with the tested side played by
``scripted:heuristic`` and once by ``scripted:random``; the sign test counts the seeds where only
one of the two won. Both sides, at the default 5 players and at 7 with Percival and Morgana.
"""
import pytest

from baseline_support import (assert_interval_above, assert_plays_cleanly_through_the_runner,
                              assert_significantly_better, paired_side_counts)

GAME = "avalon"
SEVEN = {"num_players": 7, "percival": True, "morgana": True}


@pytest.mark.parametrize("config", [{}, SEVEN])
def test_heuristic_dispatch_through_the_runner(config):
    assert_plays_cleanly_through_the_runner(GAME, config)


@pytest.mark.parametrize("side,config", [("good", {}), ("evil", {}), ("good", SEVEN), ("evil", SEVEN)])
def test_heuristic_side_beats_random(side, config):
    better, worse = paired_side_counts(GAME, side, "scripted:random", range(80), config)
    assert_significantly_better(better, worse, alpha=0.01)
    assert_interval_above(better, worse, level=0.99)
