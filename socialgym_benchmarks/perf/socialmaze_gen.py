"""Generation + certification throughput of Hidden Role Deduction, per preset and variant.

    python socialgym_benchmarks/perf/socialmaze_gen.py --n 1000 --seed 0 [--reps 3]

Prints, per (preset, variant): the accepted instances and generation attempts (simulated
games, each run through the exhaustive verifier; deterministic for a seed), the acceptance
rate, and accepted instances/s and attempts/s as the median [min-max] over ``--reps``
repetitions, interleaved (every cell once per repetition, in the same order).
Single process; the generator is pure Python, so a second core only helps if you
shard seeds across processes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# Let `python socialgym_benchmarks/perf/socialmaze_gen.py` work from a checkout without installing.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_env.socialmaze import PRESETS, VARIANTS, GenerationStats, MazeConfig  # noqa: E402
from socialgym_env.socialmaze.dataset import iter_dataset  # noqa: E402


def generate(n: int, seed: int, config: MazeConfig) -> tuple[GenerationStats, float]:
    stats = GenerationStats()
    start = time.perf_counter()
    for _ in iter_dataset(n, seed, config, stats=stats):
        pass
    return stats, time.perf_counter() - start


def rate(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} [{min(values):.0f}-{max(values):.0f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="accepted instances per cell (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (default 3)")
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = ap.parse_args(argv)

    cells = [(preset, variant) for preset in args.presets for variant in args.variants]
    runs: dict = {cell: [] for cell in cells}
    for _ in range(args.reps):
        for preset, variant in cells:
            runs[preset, variant].append(generate(args.n, args.seed, MazeConfig.from_preset(preset, variant)))
    print(f"{'preset':<6} {'variant':<12} {'n':>3} {'accepted':>8} {'attempts':>8} {'accept':>7} "
          f"{'inst/s':>20} {'attempts/s':>22}")
    for (preset, variant), cell_runs in runs.items():
        stats = cell_runs[0][0]                    # the same work every repetition (seeded)
        config = MazeConfig.from_preset(preset, variant)
        instances = [s.accepted / seconds for s, seconds in cell_runs]
        attempts = [s.attempts / seconds for s, seconds in cell_runs]
        print(f"{preset:<6} {variant:<12} {config.n_players:>3} {stats.accepted:>8} {stats.attempts:>8} "
              f"{stats.acceptance_rate:>7.3f} {rate(instances):>20} {rate(attempts):>22}")
    print(f"median [min-max] over {args.reps} interleaved repetitions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
