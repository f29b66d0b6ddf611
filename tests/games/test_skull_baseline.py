"""The skull heuristic baseline beats random play: one heuristic seat against random seats,
rotated through every seat for each seed (seat-balanced). Random play wins a seat's share
(1/n) at most, draws counting as non-wins; one-sided binomial test, p < 0.01."""
from baseline_support import assert_significantly_better, seat_rotation_wins

GAME, SEEDS = "skull", range(7000, 7000 + 50)


def test_heuristic_beats_random():
    wins, episodes, num_seats = seat_rotation_wins(GAME, SEEDS)
    assert_significantly_better(wins, episodes - wins, alpha=0.01, chance=1 / num_seats)
