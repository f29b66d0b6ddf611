"""The liars_dice heuristic baseline beats random play: one heuristic seat against random seats,
rotated through every seat for each seed (seat-balanced). Random play wins a seat's share
(1/n) at most, draws counting as non-wins; one-sided binomial test, p < 0.01."""
from scipy.stats import binomtest

import socialgym_env
from agents.runner import EpisodeJob, PolicyPool, run_jobs

GAME, SEEDS = "liars_dice", 12


def heuristic_wins(spec="scripted:heuristic", pool=None, seeds=SEEDS):
    n = socialgym_env.game_class(GAME).info.num_players
    jobs = []
    for seed in range(seeds):
        for seat in range(n):
            seats = ["scripted:random"] * n
            seats[seat] = spec
            jobs.append(EpisodeJob(GAME, 7000 + seed, seats, config={"log_observations": False}, tags={"seat": seat}))
    records = run_jobs(jobs, pool or PolicyPool())
    wins = 0
    for record in records:
        assert not record.get("failed"), record.get("error")
        wins += record["rewards"][f"player_{record['tags']['seat']}"] > 0
    return wins, len(records), n


def test_heuristic_beats_random():
    wins, total, n = heuristic_wins()
    assert binomtest(wins, total, 1 / n, alternative="greater").pvalue < 0.01, (wins, total)
