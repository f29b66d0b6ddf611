"""The The Resistance heuristic baseline beats random play (paired sign test over seeds, p < 0.01).

Each seed is played twice with the same roles and opponents: once with the tested side played by
``scripted:heuristic`` and once by ``scripted:random``; the sign test counts the seeds where
only one of the two won. Roles are dealt by the seed, so seats vary; both sides are tested.
"""
import pytest
from scipy.stats import binomtest

import socialgym_env
from agents.base import Request
from agents.runner import EpisodeJob, PolicyPool, run_jobs

GAME = "resistance"
CONFIG = {}
POOL = PolicyPool(seed=0)


def play(env, seed, side, side_spec, other_spec):
    """One episode on a reused env (building an env is the slow part); mirrors
    agents.runner.play_episode. Returns whether ``side`` won."""
    env.reset(seed=seed)
    specs = {a: side_spec if env.state.team(a) == side else other_spec for a in env.possible_agents}
    for agent in env.possible_agents:
        POOL.get(specs[agent]).reset((str(seed), agent), seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        key = (str(seed), agent)
        env.step(POOL.get(specs[agent]).act_batch([Request(key, env.observe(agent), info)])[0].action)
    return any(env.state.team(a) == side for a in env.state.result.winners)


def sign_test(side, opponent, seeds):
    env = socialgym_env.make(GAME, log_observations=False, **CONFIG)
    better = worse = 0
    for seed in seeds:
        h = play(env, seed, side, "scripted:heuristic", opponent)
        r = play(env, seed, side, "scripted:random", opponent)
        better += h and not r
        worse += r and not h
    return better, worse, binomtest(better, better + worse, 0.5, alternative="greater").pvalue


def test_heuristic_dispatch_through_the_runner():
    env = socialgym_env.make(GAME)
    job = EpisodeJob(GAME, seed=7, seats=["scripted:heuristic"] * len(env.possible_agents), config=dict(CONFIG))
    record, = run_jobs([job], POOL)
    assert record["finished"] and not record.get("failed")
    assert sum(record["invalid_actions"].values()) == 0


@pytest.mark.parametrize("side,opponent,episodes", [
    ("resistance", "scripted:random", 30),   # Resistance heuristic vs random Spies
    ("spies", "scripted:random", 30),        # Spy heuristic vs random Resistance
])
def test_heuristic_side_beats_random(side, opponent, episodes):
    better, worse, p = sign_test(side, opponent, range(episodes))
    assert better > worse and p < 0.01, (better, worse, p)
