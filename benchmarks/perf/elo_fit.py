"""Speed of the rating fit and its bootstrap at 10k, 100k and 1M pairwise outcomes.

    python -m benchmarks.perf.elo_fit [--sizes 10000 100000 1000000] [--policies 7] [--boot 1000]

Ours (``benchmarks.elo``): aggregate the outcomes to win counts per ordered pair, fit with
L-BFGS and the analytic gradient; bootstrap = one multinomial draw per resample over the
distinct cells (exact battle resampling), all resamples fit at once with batched Newton.

Reference (the usual recipe): a scikit-learn ``LogisticRegression(C=0.1, no intercept)`` on the
per-battle design matrix (one row per outcome, ±ln 10), refit on each bootstrap resample of the
battles. The reference bootstrap is timed on fewer resamples at the larger sizes
(``REF_BOOT``) and extrapolated linearly to ``--boot`` resamples; the output says so.
Both run in the same process on the same data; the last column is reference time / ours.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks import elo as bt

REF_BOOT = {10_000: 20, 100_000: 4, 1_000_000: 2}


def make_battles(n: int, k: int, seed: int = 0) -> bt.Battles:
    rng = np.random.default_rng(seed)
    planted = np.linspace(-200, 200, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = 1 / (1 + 10 ** (-(planted[a] - planted[b]) / 400))
    a_wins = rng.random(n) < p
    winner, loser = np.where(a_wins, a, b), np.where(a_wins, b, a)
    return bt.Battles([f"p{i}" for i in range(k)], winner, loser, np.arange(n), n)


def reference_fit(winner: np.ndarray, loser: np.ndarray, k: int, C: float = bt.C_DEFAULT) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression
    n = winner.size
    # one row per battle, randomly oriented so both classes appear
    flip = np.arange(n) % 2 == 1
    first, second = np.where(flip, loser, winner), np.where(flip, winner, loser)
    X = np.zeros((n, k))
    X[np.arange(n), first] = math.log(10)
    X[np.arange(n), second] = -math.log(10)
    y = (~flip).astype(int)
    lr = LogisticRegression(fit_intercept=False, C=C, tol=1e-8, max_iter=1000).fit(X, y)
    elo = 400 * lr.coef_[0]
    return elo - elo.mean() + 1000


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def run(sizes, k: int, n_boot: int, seed: int = 0) -> list[dict]:
    rows = []
    warm = make_battles(1000, k, seed)                 # imports and first-call costs out of the timings
    bt.fit_bt(warm.win_matrix())
    bt.fit_bt_batch(bt.bootstrap_wins(warm, 10, by="battle"))
    reference_fit(warm.winner, warm.loser, k)
    for n in sizes:
        battles = make_battles(n, k, seed)
        t_fit, ours = timed(lambda: bt.fit_bt(battles.win_matrix()))
        t_boot, _ = timed(lambda: bt.fit_bt_batch(bt.bootstrap_wins(battles, n_boot, by="battle", seed=seed)))
        t_ref_fit, ref = timed(reference_fit, battles.winner, battles.loser, k)
        ref_boot = min(n_boot, REF_BOOT.get(n, max(1, int(2e5 // n))))
        rng = np.random.default_rng(seed)

        def ref_bootstrap():
            for _ in range(ref_boot):
                idx = rng.integers(0, n, n)
                reference_fit(battles.winner[idx], battles.loser[idx], k)
        t_ref_b, _ = timed(ref_bootstrap)
        t_ref_boot = t_ref_b * n_boot / ref_boot
        rows.append({"n": n, "fit_s": t_fit, "boot_s": t_boot, "ref_fit_s": t_ref_fit, "ref_boot_s": t_ref_boot,
                     "ref_boot_timed": ref_boot, "max_abs_diff_elo": float(np.abs(ours - ref).max())})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--policies", type=int, default=7)
    parser.add_argument("--boot", type=int, default=1000)
    args = parser.parse_args(argv)
    rows = run(args.sizes, args.policies, args.boot)
    print(f"{args.policies} policies, {args.boot} bootstrap resamples (battle resampling)")
    print(f"{'outcomes':>10} | {'fit ours':>9} {'fit sklearn':>11} {'ratio':>7} | {'boot ours':>9} "
          f"{'boot sklearn':>12} {'ratio':>8} | {'|Δ| Elo':>8}")
    for r in rows:
        print(f"{r['n']:>10,} | {r['fit_s']:>8.4f}s {r['ref_fit_s']:>10.3f}s {r['ref_fit_s'] / r['fit_s']:>6.0f}x | "
              f"{r['boot_s']:>8.3f}s {r['ref_boot_s']:>11.1f}s* {r['ref_boot_s'] / r['boot_s']:>7.0f}x | "
              f"{r['max_abs_diff_elo']:>8.4f}")
    print("* sklearn bootstrap extrapolated from " + ", ".join(f"{r['ref_boot_timed']} timed resamples at {r['n']:,}"
                                                              for r in rows) + f" to {args.boot}.")
    print("Δ Elo: ours vs the sklearn fit of the same data (same C, same design).")
    return rows


if __name__ == "__main__":
    main()
