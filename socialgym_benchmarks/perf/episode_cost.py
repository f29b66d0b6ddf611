"""Wall time and decisions of one seeded episode per game, every seat a scripted policy, played
through the runner as a tournament plays it: what a game adds to a preset before any model runs.

    python socialgym_benchmarks/perf/episode_cost.py --games avalon,codenames,resistance --episodes 20 --reps 5

Each repetition plays the same seeded episodes (seeds 0..episodes-1) of every game, the games
interleaved (A, B, C, A, B, C, ...), and takes the mean wall time per episode; the table gives
the median and range of those means over the repetitions, and the decisions per episode
(deterministic for a seed: median and range over the seeds), which times a model's seconds per
decision estimate what the game costs a model that holds every seat. ``-c KEY=VALUE`` sets a game
config key (``-c num_players=7``) for every game that has it. Prints the CPU model and flags.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import socialgym_env  # noqa: E402
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs  # noqa: E402
from socialgym_benchmarks.perf.demo_cost import cpu_model  # noqa: E402
from socialgym_benchmarks.tournament.plan import parse_value  # noqa: E402

FLAGS_SHOWN = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                present = set(line.split(":", 1)[1].split())
                return ", ".join(f"{flag} {'yes' if flag in present else 'no'}" for flag in FLAGS_SHOWN)
    except OSError:
        pass
    return "unknown"


def game_config(game: str, overrides: dict) -> dict:
    cls = socialgym_env.game_class(game)
    known = set(cls.config_defaults) | {"num_players"}
    return {key: value for key, value in overrides.items() if key in known}


def play(game: str, seeds, policy: str, config: dict, pool: PolicyPool) -> tuple[float, list]:
    """Mean seconds per episode and each episode's decisions."""
    seats = [policy] * len(socialgym_env.make(game, **config).possible_agents)
    jobs = [EpisodeJob(game, seed, seats, config=dict(config, log_observations=False)) for seed in seeds]
    start = time.perf_counter()
    records = run_jobs(jobs, pool)
    elapsed = time.perf_counter() - start
    for record in records:
        if record.get("failed") or not record.get("finished"):
            raise SystemExit(f"{game}: an episode did not finish: {record.get('error') or record.get('reason')}")
    return elapsed / len(jobs), [len(record["turns"]) for record in records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="avalon,codenames,resistance")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--policy", default="scripted:heuristic")
    parser.add_argument("-c", "--config", action="append", default=[], help="KEY=VALUE for every game that has KEY")
    args = parser.parse_args()
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    overrides = {k: parse_value(v) for k, _, v in (item.partition("=") for item in args.config)}
    configs = {game: game_config(game, overrides) for game in games}
    pool = PolicyPool(seed=0)
    seeds = range(args.episodes)
    for game in games:                                   # warm-up: imports, first builds
        play(game, range(1), args.policy, configs[game], pool)
    means = {game: [] for game in games}
    decisions = {}
    for _ in range(args.reps):
        for game in games:
            mean, counts = play(game, seeds, args.policy, configs[game], pool)
            means[game].append(mean)
            decisions[game] = counts
    print(f"CPU: {cpu_model()}; flags: {cpu_flags()}")
    print(f"{args.episodes} seeded episodes per game, every seat {args.policy}, {args.reps} interleaved repetitions")
    print(f"{'game':<14} {'config':<22} {'ms/episode median [min-max]':<30} decisions/episode median [min-max]")
    for game in games:
        ms = [1000 * m for m in means[game]]
        counts = decisions[game]
        config = ",".join(f"{k}={v}" for k, v in configs[game].items()) or "default"
        print(f"{game:<14} {config:<22} {statistics.median(ms):8.1f} [{min(ms):.1f}-{max(ms):.1f}]"
              f"{'':<10} {statistics.median(counts):g} [{min(counts)}-{max(counts)}]")


if __name__ == "__main__":
    main()
