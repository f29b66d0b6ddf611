"""Speed of the rating bootstrap against scikit-learn, at 7 and 50 policies and 10k-1M outcomes.

    python -m socialgym_benchmarks.perf.elo_fit [--sizes 10000 100000 1000000] [--policies 7 50] [--boot 1000] [--by episode]

Ours (``socialgym_benchmarks.ratings.rate``): the point fit, then ``bootstrap_wins`` (one multinomial draw
per resample over the win-count cells, ``multinomial_counts``: Poisson counts read from CDF
tables, ``poisson_counts``, topped up to the exact multinomial) and ``fit_bt_batch`` (all
resamples at once: float32 chord steps from the point fit, float64 Newton where those do not
settle), timed end to end on ``--boot`` resamples, then its two parts again on their own
(draws, fit), printed under each row.

Baselines, both ``LogisticRegression(C=0.1, fit_intercept=False, lbfgs, tol=1e-8)``:
  sklearn aggregated  the paper's Appendix B design: one row per ordered pair with its win
                      count as sample weight; the point fit plus a refit on each resample's win
                      matrix (the same resampled matrices ours fits);
  sklearn per-battle  one row per outcome (the naive recipe), refit on each resample of the
                      battles; skipped where its design would exceed ``--max-battle-cells``.
Each baseline is timed on ``--ref-boot`` resamples and scaled linearly to ``--boot`` (the
output marks these figures with *). Every repetition runs ours and the baselines back to back
(interleaved), the table prints medians [min-max] over ``--reps`` repetitions, and the last
column is the largest rating difference between ours and sklearn aggregated on the same
resamples (Elo). BLAS/OpenMP threads are capped at ``--threads`` (default 1) for everyone:
tiny sklearn fits lose far more to thread wake-ups on a loaded machine than they gain.
"""
from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from socialgym_benchmarks import ratings as bt


def make_battles(n: int, k: int, seed: int = 0, per_episode: int = 1) -> bt.Battles:
    """``n`` outcomes between ``k`` policies with planted ratings (-200 to 200 Elo), grouped
    ``per_episode`` consecutive outcomes to an episode (what episode resampling moves together)."""
    rng = np.random.default_rng(seed)
    planted = np.linspace(-200, 200, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = 1 / (1 + 10 ** (-(planted[a] - planted[b]) / 400))
    a_wins = rng.random(n) < p
    winner, loser = np.where(a_wins, a, b), np.where(a_wins, b, a)
    return bt.Battles([f"p{i}" for i in range(k)], winner, loser, np.arange(n) // per_episode,
                      -(-n // per_episode))


def _elo_from_coef(coef: np.ndarray) -> np.ndarray:
    elo = bt.SCALE * coef
    return elo - elo.mean() + bt.ANCHOR


def sklearn_aggregated_fit(wins: np.ndarray, C: float = bt.C_DEFAULT, tol: float = 1e-8) -> np.ndarray:
    """Elo from a win matrix with scikit-learn on the aggregated design: per unordered pair
    (i < j) a row ``ln10 (e_i - e_j)`` labelled 1 weighted by ``wins[i, j]`` and one labelled 0
    weighted by ``wins[j, i]`` (zero-weight rows dropped)."""
    from sklearn.linear_model import LogisticRegression
    k = wins.shape[0]
    i, j = np.triu_indices(k, 1)
    rows = np.zeros((2 * i.size, k))
    rows[np.arange(2 * i.size), np.concatenate([i, i])] = bt.LN_BASE
    rows[np.arange(2 * i.size), np.concatenate([j, j])] = -bt.LN_BASE
    labels = np.concatenate([np.ones(i.size, int), np.zeros(i.size, int)])
    weights = np.concatenate([wins[i, j], wins[j, i]]).astype(float)
    keep = weights > 0
    if len(set(labels[keep])) < 2:       # one class only: sklearn cannot fit, ratings are tied
        return np.full(k, bt.ANCHOR)
    lr = LogisticRegression(fit_intercept=False, C=C, tol=tol, max_iter=10_000)
    lr.fit(rows[keep], labels[keep], sample_weight=weights[keep])
    return _elo_from_coef(lr.coef_[0])


def sklearn_battle_fit(winner: np.ndarray, loser: np.ndarray, k: int, C: float = bt.C_DEFAULT) -> np.ndarray:
    """Elo with scikit-learn on the per-battle design: one row per outcome, randomly oriented
    so both classes appear."""
    from sklearn.linear_model import LogisticRegression
    n = winner.size
    flip = np.arange(n) % 2 == 1
    first, second = np.where(flip, loser, winner), np.where(flip, winner, loser)
    X = np.zeros((n, k))
    X[np.arange(n), first] = math.log(10)
    X[np.arange(n), second] = -math.log(10)
    lr = LogisticRegression(fit_intercept=False, C=C, tol=1e-8, max_iter=1000).fit(X, (~flip).astype(int))
    return _elo_from_coef(lr.coef_[0])


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def one_repetition(battles: bt.Battles, n_boot: int, ref_boot: int, max_battle_cells: int, seed: int,
                   by: str = "battle") -> dict:
    k, n = len(battles.players), battles.n
    t_ours, ratings = timed(bt.rate, battles, n_boot, by=by, seed=seed, keep_samples=True)
    ours = ratings.samples
    # ours in its two parts, on the same draws: the multinomial resampling and the batched fit
    t_draws, wins = timed(bt.bootstrap_wins, battles, n_boot, by=by, seed=seed)
    t_fit, _ = timed(bt.fit_bt_batch, wins, start=ratings.elo)
    resamples = wins[:ref_boot]                                                # the same first draws
    t_agg, ref = timed(lambda: [sklearn_aggregated_fit(battles.win_matrix())]
                       + [sklearn_aggregated_fit(w) for w in resamples])
    ref = np.array(ref[1:])
    row = {"ours_s": t_ours, "draws_s": t_draws, "fit_s": t_fit, "agg_s": t_agg * n_boot / ref_boot,
           "max_diff_elo": float(np.abs(ours[:ref_boot] - ref).max())}
    if n * k <= max_battle_cells:
        rng = np.random.default_rng(seed)

        def battle_bootstrap():
            for _ in range(ref_boot):
                idx = rng.integers(0, n, n)
                sklearn_battle_fit(battles.winner[idx], battles.loser[idx], k)
        t_battle, _ = timed(battle_bootstrap)
        row["battle_s"] = t_battle * n_boot / ref_boot
    return row


def run(sizes, policies, n_boot: int, ref_boot: int, reps: int, max_battle_cells: int, by: str = "battle",
        per_episode: int = 1) -> dict:
    warm = make_battles(1000, 7)                     # imports and first-call costs out of the timings
    one_repetition(warm, 10, 2, max_battle_cells, 0, by)
    cases = [(k, n) for k in policies for n in sizes]
    data = {case: make_battles(case[1], case[0], per_episode=per_episode) for case in cases}
    results: dict = {case: [] for case in cases}
    for rep in range(reps):
        for case in cases:                           # ours and both baselines back to back
            results[case].append(one_repetition(data[case], n_boot, ref_boot, max_battle_cells, rep, by))
    return results


def fmt(values) -> str:
    return f"{statistics.median(values):.3g}s [{min(values):.3g}-{max(values):.3g}]"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--policies", type=int, nargs="+", default=[7, 50])
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--ref-boot", type=int, default=20, help="resamples the sklearn baselines are timed on")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--by", choices=["battle", "episode"], default="battle",
                        help="what ours resamples (with one battle per episode both are the same law)")
    parser.add_argument("--battles-per-episode", type=int, default=1,
                        help="outcomes grouped into one episode (matters for --by episode only)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads for every contender")
    parser.add_argument("--max-battle-cells", type=int, default=5_000_000,
                        help="skip the per-battle baseline above outcomes x policies")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits
    with threadpool_limits(args.threads):
        results = run(args.sizes, args.policies, args.boot, min(args.ref_boot, args.boot), args.reps,
                      args.max_battle_cells, args.by, args.battles_per_episode)
    print(f"{args.boot} bootstrap resamples ({args.by} resampling, {args.battles_per_episode} battle(s) an episode), {args.threads} BLAS thread(s), {args.reps} interleaved repetitions, "
          f"median [min-max]; shared machine: expect noise")
    print(f"{'policies':>8} {'outcomes':>10} | {'ours':>22} | {'sklearn aggregated*':>24} {'speed-up':>9} | "
          f"{'sklearn per-battle*':>24} {'speed-up':>9} | {'max |Δ| Elo':>11}")
    for (k, n), rows in results.items():
        ours = [r["ours_s"] for r in rows]
        agg = [r["agg_s"] for r in rows]
        battle = [r["battle_s"] for r in rows if "battle_s" in r]
        speed_agg = statistics.median(a / o for a, o in zip(agg, ours))
        battle_cells = (f"{fmt(battle):>24} {statistics.median(b / o for b, o in zip(battle, ours)):8.0f}x"
                        if battle else f"{'skipped (design too big)':>24} {'-':>9}")
        print(f"{k:>8} {n:>10,} | {fmt(ours):>22} | {fmt(agg):>24} {speed_agg:8.0f}x | {battle_cells} | "
              f"{max(r['max_diff_elo'] for r in rows):11.4f}")
        print(f"{'':>19} | of which: draws {fmt([r['draws_s'] for r in rows])}, fit {fmt([r['fit_s'] for r in rows])}")
    print(f"* timed on {min(args.ref_boot, args.boot)} resamples, scaled linearly to {args.boot}. "
          "Speed-up: median over repetitions of baseline time / ours in the same repetition.")
    return results


if __name__ == "__main__":
    main()
