"""Coverage of the leaderboard's 95% Elo intervals, by simulation with planted strengths.

Each repetition plays ``episodes`` simulated episodes among four policies of planted Elo
(mean 1000): half of them two-seat games (one battle, decided by the Bradley–Terry
probability), half three-seat free-for-alls of three distinct policies (the winner drawn with
probability proportional to ``10 ** (elo / 400)``, Plackett–Luce's first pick, so any two
seats compare as Bradley–Terry says; the winner beats both others, the two losers tie and
are left out, as ``--ties exclude`` does). Each policy's interval is checked against its
planted Elo; every (repetition, policy) counts once.

Methods: ``profile`` (the leaderboard's default: profile likelihood, episode design effect,
:func:`socialgym_benchmarks.elo.profile_elo_intervals`), ``bootstrap-episode`` and
``bootstrap-battle`` (the percentile bootstrap around the penalised fit, as the paper).

    python -m socialgym_benchmarks.interval_coverage --reps 200

prints the coverage table (and the median width, and how often a bound is unbounded).
"""
from __future__ import annotations

import argparse

import numpy as np

from . import elo as bt

PLANTED = {"near": (1075.0, 1025.0, 975.0, 925.0), "spread": (1300.0, 1100.0, 900.0, 700.0)}
SIZES = (12, 50, 200)
METHODS = ("profile", "bootstrap-episode", "bootstrap-battle")


def simulate_battles(planted: np.ndarray, episodes: int, rng: np.random.Generator) -> bt.Battles:
    """Battles of ``episodes`` simulated episodes (see the module docstring)."""
    k = planted.size
    strength = 10.0 ** ((planted - planted.mean()) / bt.SCALE)
    win, lose, ep = [], [], []
    for e in range(episodes):
        seats = rng.choice(k, size=2 if e % 2 == 0 else 3, replace=False)
        odds = strength[seats]
        winner = seats[rng.choice(seats.size, p=odds / odds.sum())]
        for loser in seats[seats != winner]:
            win.append(winner)
            lose.append(loser)
            ep.append(e)
    return bt.Battles([f"p{i}" for i in range(k)], np.asarray(win, dtype=np.int64),
                      np.asarray(lose, dtype=np.int64), np.asarray(ep, dtype=np.int64), episodes)


def interval(battles: bt.Battles, method: str, n_boot: int, seed: int):
    if method == "profile":
        r = bt.rate(battles, interval="profile")
    else:
        r = bt.rate(battles, n_boot=n_boot, by=method.split("-")[1], seed=seed)
    return r.lo, r.hi


def coverage(planted, episodes: int, reps: int, methods=METHODS, n_boot: int = 200, seed: int = 0) -> dict:
    """{method: {"coverage", "median_width", "unbounded"}} over ``reps`` repetitions."""
    planted = np.asarray(planted, dtype=float)
    rng = np.random.default_rng(seed)
    hits = {m: [] for m in methods}
    widths = {m: [] for m in methods}
    for rep in range(reps):
        battles = simulate_battles(planted, episodes, rng)
        for m in methods:
            lo, hi = interval(battles, m, n_boot, seed=rep)
            hits[m].append((lo <= planted) & (planted <= hi))
            widths[m].append(hi - lo)
    out = {}
    for m in methods:
        width = np.concatenate(widths[m])
        out[m] = {"coverage": float(np.mean(hits[m])), "median_width": float(np.median(width)),
                  "unbounded": float(np.mean(~np.isfinite(width)))}
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--boot", type=int, default=200, help="bootstrap resamples a repetition")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args(argv)
    methods = args.methods.split(",")
    print(f"coverage of the 95% Elo interval, {args.reps} repetitions x 4 policies, seed {args.seed}")
    print(f"{'planted':<8} {'episodes':>8} {'method':<18} {'coverage':>8} {'median width':>12} {'unbounded':>9}")
    for name, planted in PLANTED.items():
        for size in map(int, args.sizes.split(",")):
            table = coverage(planted, size, args.reps, methods, args.boot, args.seed)
            for m in methods:
                row = table[m]
                print(f"{name:<8} {size:>8} {m:<18} {100 * row['coverage']:>7.1f}% {row['median_width']:>12.0f} "
                      f"{100 * row['unbounded']:>8.1f}%")


if __name__ == "__main__":
    main()
