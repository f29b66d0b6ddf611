"""The The Resistance heuristic baseline beats random play (paired sign test over seeds, p < 0.01).

Each seed is played twice with the same roles and opponents: once with the tested side played by
``scripted:heuristic`` and once by ``scripted:random``; the sign test counts the seeds where
only one of the two won. Roles are dealt by the seed, so seats vary; both sides are tested.
"""
import pytest

from baseline_support import assert_plays_cleanly_through_the_runner, assert_significantly_better, paired_side_counts

GAME = "resistance"
CONFIG = {}


def test_heuristic_dispatch_through_the_runner():
    assert_plays_cleanly_through_the_runner(GAME, CONFIG)


@pytest.mark.parametrize("side,opponent,episodes", [
    ("resistance", "scripted:random", 30),   # Resistance heuristic vs random Spies
    ("spies", "scripted:random", 30),        # Spy heuristic vs random Resistance
])
def test_heuristic_side_beats_random(side, opponent, episodes):
    better, worse = paired_side_counts(GAME, side, opponent, range(episodes), CONFIG)
    assert_significantly_better(better, worse, alpha=0.01)
