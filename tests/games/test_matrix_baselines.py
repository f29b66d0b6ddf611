"""The heuristic baselines of the nine normal-form and economic games: each plays legal moves,
and in the competitive ones where a strategy can beat random play it does."""
import pytest

from socialgym_agents.runner import EpisodeJob, run_jobs
from baseline_support import assert_significantly_better, play_matchups, rotated_seats

PLAYERS = {"prisoners_dilemma": 2, "chicken": 2, "stag_hunt": 4, "public_goods": 4, "rock_paper_scissors": 2,
           "minority_game": 5, "battle_of_the_sexes": 2, "centipede": 2, "bargaining": 2}


def heuristic_vs_random(game, episodes):
    """One heuristic seat rotated through every seat; (wins, losses, invalid actions)."""
    n = PLAYERS[game]
    records = play_matchups(game, [(seed, rotated_seats(seed % n, n)) for seed in range(episodes)])
    rewards = [r["rewards"][f"player_{seed % n}"] for seed, r in enumerate(records)]
    invalid = sum(sum(r["invalid_actions"].values()) for r in records)
    return sum(x > 0 for x in rewards), sum(x < 0 for x in rewards), invalid


@pytest.mark.parametrize("game", ["prisoners_dilemma", "chicken", "stag_hunt", "bargaining"])
def test_heuristic_beats_random(game):
    wins, losses, invalid = heuristic_vs_random(game, 24)
    assert invalid == 0
    assert_significantly_better(wins, losses, alpha=0.01)


@pytest.mark.parametrize("game", ["public_goods", "rock_paper_scissors", "minority_game", "battle_of_the_sexes",
                                  "centipede"])
def test_heuristic_plays_only_legal_moves(game):
    # Cooperative or symmetric games: no strategy beats uniform random play on the outcome.
    _, _, invalid = heuristic_vs_random(game, 6)
    assert invalid == 0


def test_conditional_cooperator_and_take_turns_follow_their_rules():
    record = run_jobs([EpisodeJob("public_goods", 0, ["scripted:heuristic", "scripted:constant:contribute 4",
                                                     "scripted:constant:contribute 4", "scripted:constant:contribute 7"],
                                  config={"rounds": 2})])[0]
    assert [t["action"] for t in record["turns"] if t["agent"] == "player_0"] == ["contribute 10", "contribute 5"]
    record = run_jobs([EpisodeJob("battle_of_the_sexes", 1, ["scripted:heuristic", "scripted:heuristic"],
                                  config={"rounds": 4})])[0]
    assert record["metrics"]["coordination"] == 1.0   # the first speaker decides, every round
    picks = [t["action"] for t in record["turns"] if t["agent"] == "player_0" and not t["action"].startswith("say")]
    assert picks[0] != picks[1] and picks[0] == picks[2]  # and the two take turns
