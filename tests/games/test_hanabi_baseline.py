"""The hanabi heuristic beats random play. Hanabi is cooperative, so a table is one policy: each
seed's deck is played by an all-heuristic table and by an all-random table, and the paired
difference of the shared score is tested: a one-sided sign test (p < 0.01) and a 99% t-interval
of the mean difference lying wholly above 0. (Random tables burn every fuse and score 0; the
cautious heuristic burns none.)"""
from statistics import fmean, stdev

from scipy.stats import t as student_t

from baseline_support import (HEURISTIC, RANDOM, assert_plays_cleanly_through_the_runner,
                              assert_significantly_better, play_matchups, sign_counts)

GAME, SEEDS = "hanabi", range(9300, 9300 + 16)


def shared_scores(spec, num_players):
    records = play_matchups(GAME, [(seed, [spec] * num_players) for seed in SEEDS], {"num_players": num_players})
    return [record["scores"]["player_0"] for record in records]


def test_heuristic_table_beats_random_table():
    for num_players in (2, 4):
        gaps = [h - r for h, r in zip(shared_scores(HEURISTIC, num_players), shared_scores(RANDOM, num_players))]
        better, worse = sign_counts(gaps)
        assert_significantly_better(better, worse, alpha=0.01)
        half_width = student_t.ppf(0.995, len(gaps) - 1) * stdev(gaps) / len(gaps) ** 0.5
        assert fmean(gaps) - half_width > 0, (num_players, gaps)


def test_an_all_heuristic_table_plays_cleanly():
    assert_plays_cleanly_through_the_runner(GAME, {"num_players": 5})
