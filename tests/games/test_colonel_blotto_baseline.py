"""The colonel_blotto heuristic (a near-even split) beats uniform-random allocations: one
heuristic seat against one random seat, each seed played from both seats. Draws (as many fields
each) drop out; of the decided episodes the heuristic wins a share whose 99% interval lies above
one half (and a one-sided binomial test, p < 0.01). Exact figure for 10 troops on 3 fields: a
4 3 3 split wins 33 of the 66 random allocations, loses to 12, ties 21."""
from baseline_support import (HEURISTIC, assert_interval_above, assert_plays_cleanly_through_the_runner,
                              assert_significantly_better, play_matchups, rotated_seats, sign_counts)

GAME, SEEDS = "colonel_blotto", range(9100, 9100 + 100)


def test_heuristic_beats_random():
    matchups = [(seed, rotated_seats(seat, 2)) for seed in SEEDS for seat in range(2)]
    records = play_matchups(GAME, matchups)
    gaps = [r["rewards"][a["agent"]] for r in records for a in r["roster"] if a["policy"] == HEURISTIC]
    wins, losses = sign_counts(gaps)
    assert_significantly_better(wins, losses, alpha=0.01)
    assert_interval_above(wins, losses, chance=0.5, level=0.99)


def test_three_player_table_plays_cleanly():
    assert_plays_cleanly_through_the_runner(GAME, {"num_players": 3, "talk_rounds": 1})
