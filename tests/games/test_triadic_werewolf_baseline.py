"""The Triadic Werewolf heuristic baseline beats random play (paired sign test over seeds, p < 0.01).

Each seed is played twice with the same roles and opponents: once with the tested side played by
``scripted:heuristic`` and once by ``scripted:random``; the sign test counts the seeds where
only one of the two won. Roles are dealt by the seed, so seats vary; both sides are tested.
"""
from baseline_support import assert_plays_cleanly_through_the_runner, assert_significantly_better, paired_side_counts

GAME = "triadic_werewolf"
CONFIG = {"max_debate_turns": 1, "max_explanation_turns": 1}


def test_heuristic_dispatch_through_the_runner():
    assert_plays_cleanly_through_the_runner(GAME, CONFIG)


def test_village_heuristic_beats_random():
    """Villagers and the Doctor (claim, then exile non-claimers) against random Werewolves and
    a random Jester. (Random Werewolves already win ~97% against a random village, and a lone
    Jester cannot sway random voters, so those sides have no measurable edge over random.)"""
    better, worse = paired_side_counts(GAME, "village", "scripted:random", range(30), CONFIG)
    assert_significantly_better(better, worse, alpha=0.01)
