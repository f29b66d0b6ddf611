"""PettingZoo's own ``performance_benchmark`` on every game: turns per second with random
actions from each seat's action space (text spaces: almost every action is junk, so this times
the invalid-action path; masked views: random legal slots).

    python socialgym_benchmarks/perf/pettingzoo_benchmark.py [--games all] [--view text|masked]

Each game runs PettingZoo's ``pettingzoo.test.performance_benchmark`` (5 s per game, its fixed
duration; the env is seeded first so the episodes are reproducible), whose printed turns per
second are read back; the table and the median over the games are printed. The code measured is
whatever ``socialgym_env`` imports (put a checkout first on ``PYTHONPATH`` to time that one).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import re
import statistics

import socialgym_env


def turns_per_second(game: str, view: str = "text") -> float:
    """PettingZoo's performance_benchmark on one game; the turns per second it prints."""
    from pettingzoo.test import performance_benchmark
    if view == "masked":
        from socialgym_env.masked import masked_env
        env = masked_env(game, with_text=False)
    else:
        env = socialgym_env.make(game)
    env.reset(seed=0)
    for agent in env.possible_agents:
        env.action_space(agent).seed(0)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        performance_benchmark(env)
    return float(re.search(r"([0-9.e+]+) turns per second", printed.getvalue()).group(1))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="all", help="comma-separated game ids (default: all)")
    parser.add_argument("--view", choices=("text", "masked"), default="text")
    args = parser.parse_args(argv)
    games = socialgym_env.game_ids() if args.games == "all" else args.games.split(",")
    rates = {}
    for game in games:
        rates[game] = turns_per_second(game, args.view)
        print(f"{game:28s} {rates[game]:10.0f} turns/s", flush=True)
    print(f"median over {len(rates)} games ({args.view} view): {statistics.median(rates.values()):.0f} turns/s")
    return rates


if __name__ == "__main__":
    main()
