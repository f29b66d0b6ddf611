"""The undercover heuristic baseline beats random play (role-balanced, sign test p < 0.01)."""
import pytest
from scipy.stats import binomtest

import socialgym_env
from agents.runner import EpisodeJob, PolicyPool, run_jobs

HEURISTIC, RANDOM = "scripted:heuristic", "scripted:random"
GAME, SEEDS = "undercover", 40


def heuristic_vs_random(game, seeds, config):
    """For each seed two episodes: the heuristic plays the main side and random the alt side,
    then the other way round (so random-vs-random would win exactly half on average).
    Returns the heuristic side's wins per side."""
    main = socialgym_env.game_class(game).info.main_role
    jobs = []
    for seed in range(seeds):
        env = socialgym_env.make(game, **config)
        env.reset(seed=seed)
        roles = [env.state.role(a) for a in env.possible_agents]
        for heuristic_main in (True, False):
            seats = [HEURISTIC if (role == main) == heuristic_main else RANDOM for role in roles]
            jobs.append(EpisodeJob(game, seed, seats, config=dict(config, log_observations=False),
                                   tags={"main": heuristic_main}))
    wins = {True: 0, False: 0}
    for job, record in zip(jobs, run_jobs(jobs, PolicyPool())):
        assert not record.get("failed"), record.get("error")
        seat = f"player_{job.seats.index(HEURISTIC)}"
        wins[job.tags["main"]] += record["rewards"][seat] > 0
    return wins


@pytest.mark.parametrize("config", [{}, {"roles_known": False}])
def test_heuristic_beats_random(config):
    wins = heuristic_vs_random(GAME, SEEDS, config)
    total = wins[True] + wins[False]
    assert binomtest(total, 2 * SEEDS, 0.5, alternative="greater").pvalue < 0.01, wins
    assert wins[True] > SEEDS // 2, wins        # the main side's heuristic wins most of its games
