"""Generation + certification throughput of Hidden Role Deduction, per preset and variant.

    python benchmarks/perf/socialmaze_gen.py --n 1000 --seed 0

Prints, per (preset, variant): generation attempts/s (simulated games, each run
through the exhaustive verifier), accepted instances/s and the acceptance rate.
Single process; the generator is pure Python, so a second core only helps if you
shard seeds across processes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# Let `python benchmarks/perf/socialmaze_gen.py` work from a checkout without installing.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_env.socialmaze import PRESETS, VARIANTS, GenerationStats, MazeConfig  # noqa: E402
from socialgym_env.socialmaze.dataset import iter_dataset  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="accepted instances per cell (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = ap.parse_args(argv)

    print(f"{'preset':<6} {'variant':<12} {'n':>3} {'accepted':>8} {'attempts':>8} {'accept':>7} "
          f"{'inst/s':>8} {'attempts/s':>10} {'seconds':>8}")
    for preset in args.presets:
        for variant in args.variants:
            config = MazeConfig.from_preset(preset, variant)
            stats = GenerationStats()
            t0 = time.perf_counter()
            for _ in iter_dataset(args.n, args.seed, config, stats=stats):
                pass
            dt = time.perf_counter() - t0
            print(f"{preset:<6} {variant:<12} {config.n_players:>3} {stats.accepted:>8} {stats.attempts:>8} "
                  f"{stats.acceptance_rate:>7.3f} {stats.accepted / dt:>8.0f} {stats.attempts / dt:>10.0f} "
                  f"{dt:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
