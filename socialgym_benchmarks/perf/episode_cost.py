"""Wall time and decisions of one seeded episode per game with scripted seats, as a tournament
plays it (socialgym_agents.runner, one process), to size a game's place in a tournament preset.

    python socialgym_benchmarks/perf/episode_cost.py --games hanabi,colonel_blotto \\
        --seats scripted:heuristic,scripted:random --episodes 20 --reps 3

For each repetition the games are played in turn (interleaved: game A's episodes, B's, A's, ...),
each its ``--episodes`` seeded episodes (seeds 0, 1, ...) with every seat one of ``--seats`` in
rotation; a game's episode time is its repetition's wall time over its episode count. Printed:
per game the median [min-max] over repetitions of seconds per episode and the median [min-max]
decisions per episode, with the CPU model and its AVX2 / AVX-512 / AMX flags. ``-c game.key=value``
sets a game's config (repeatable).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_benchmarks.tournament.plan import parse_overrides

import socialgym_env


def host_line() -> str:
    model, flags = platform.processor() or platform.machine(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = sorted(f for f in line.split(":", 1)[1].split() if f.startswith(("avx2", "avx512", "amx")))
    except OSError:
        pass
    return f"{model}; flags: {' '.join(flags) or 'no avx512 / amx'}"


def jobs_for(game: str, episodes: int, seats: list, config: dict) -> list:
    num_seats = len(socialgym_env.make(game, **config).possible_agents)
    return [EpisodeJob(game, seed, [seats[(seed + i) % len(seats)] for i in range(num_seats)],
                       config=dict(config, log_observations=False)) for seed in range(episodes)]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="avalon,codenames,hanabi,colonel_blotto")
    parser.add_argument("--seats", default="scripted:heuristic,scripted:random")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("-c", "--config", action="append", default=[], help="game.key=value")
    args = parser.parse_args(argv)
    games, seats = args.games.split(","), args.seats.split(",")
    overrides = parse_overrides(args.config)
    times: dict = {g: [] for g in games}
    decisions: dict = {g: [] for g in games}
    pool = PolicyPool(seed=0)
    for _ in range(args.reps):
        for game in games:
            jobs = jobs_for(game, args.episodes, seats, overrides.get(game, {}))
            start = time.perf_counter()
            records = run_jobs(jobs, pool)
            times[game].append((time.perf_counter() - start) / len(jobs))
            decisions[game] = [r["steps"] for r in records]
    print(f"host: {host_line()}")
    print(f"{args.episodes} seeded episodes per game and repetition, {args.reps} repetitions, seats {', '.join(seats)}")
    print(f"{'game':<18} {'s / episode, median [min-max]':>32} {'decisions / episode, median [min-max]':>40}")
    out = {}
    for game in games:
        t, d = times[game], decisions[game]
        out[game] = {"seconds": statistics.median(t), "decisions": statistics.median(d)}
        print(f"{game:<18} {statistics.median(t):>12.4f} [{min(t):.4f}-{max(t):.4f}]"
              f" {statistics.median(d):>22g} [{min(d)}-{max(d)}]")
    return out


if __name__ == "__main__":
    main()
