"""The Werewolves heuristic baseline beats random play (paired sign test over seeds, p < 0.01).

Each seed is played twice with the same roles and opponents: once with the tested side played by
``scripted:heuristic`` and once by ``scripted:random``; the sign test counts the seeds where
only one of the two won. Roles are dealt by the seed, so seats vary; both sides are tested.
"""
import pytest

from baseline_support import assert_plays_cleanly_through_the_runner, assert_significantly_better, paired_side_counts

GAME = "werewolves"
CONFIG = {}


def test_heuristic_dispatch_through_the_runner():
    assert_plays_cleanly_through_the_runner(GAME, CONFIG)


@pytest.mark.parametrize("side,opponent,episodes", [
    # village heuristic (truthful Seer, villagers follow its accusations) vs random Werewolves
    # (200 and 120 seeds: at 100 and 40 the test passed or failed with the seats' random streams,
    # p = 0.08 and 0.016 under socialgym_agents.base.seat_seed; 36-16 and 20-0 decisive seeds now)
    ("village", "scripted:random", 200),
    # Werewolf heuristic vs the heuristic village: random Werewolves already win ~90% against a
    # random village, so the heuristic's edge shows against an informed village
    ("werewolves", "scripted:heuristic", 120),
])
def test_heuristic_side_beats_random(side, opponent, episodes):
    better, worse = paired_side_counts(GAME, side, opponent, range(episodes), CONFIG)
    assert_significantly_better(better, worse, alpha=0.01)
