"""A batch of 64 live Triadic Werewolf envs stays within a stated memory bound (README:
socialgym_benchmarks/perf/env_memory.py reports the measured RSS per env)."""
from socialgym_benchmarks.perf.env_memory import measure

# Stated bound: RSS growth per live env after 100 steps (observations logged: the heaviest setting).
MAX_MIB_PER_ENV = 2.0


def test_64_triadic_werewolf_envs_stay_under_the_bound():
    run = measure("triadic_werewolf", envs=64, steps=100)
    assert run["steps"] >= 64 * 90                     # they really played (a few may end early)
    assert 0 < run["per_env"] / 2**20 < MAX_MIB_PER_ENV, run
