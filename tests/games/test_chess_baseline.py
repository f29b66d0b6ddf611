"""The chess heuristic baseline beats scripted:random: the greedy mover vs a random mover, alternating seats (colours are dealt by the seed).

Per episode: mean outcome reward of the heuristic seats minus that of the random seats; a one-sided
sign test over the episodes where they differ must give p < 0.01 (many end in a 300-ply draw).
"""
from socialgym_agents.registry import make_policy

from baseline_support import assert_significantly_better, play_matchups, reward_gap, rotated_seats, sign_counts

GAME = "chess"
SEATS, HEURISTIC_SEATS, EPISODES = 2, 1, 24


def test_heuristic_is_dispatched_for_the_game():
    policy = make_policy("scripted:heuristic")
    assert policy._delegate(GAME).policy_id == "scripted:heuristic:chess"


def test_heuristic_beats_random_sign_test():
    records = play_matchups(GAME, [(5000 + i, rotated_seats(i, SEATS, HEURISTIC_SEATS)) for i in range(EPISODES)])
    better, worse = sign_counts(reward_gap(record) for record in records)
    print(f"{GAME}: heuristic better in {better}, worse in {worse} of {len(records)} episodes")
    assert_significantly_better(better, worse, alpha=0.01)
