"""Episodes to resolve a ranking: the adaptive tournament against a round robin, with planted
strengths (simulated two-seat outcomes: no game, no model, seconds a repetition).

Both designs use the same rule (:mod:`socialgym_benchmarks.tournament.adaptive`): the same first round
(every pair ``FIRST_PER_PAIR`` times), looks at the same planned totals, the same Bonferroni-
corrected level, the same stop (every adjacent pair of the fitted order resolved, or the
budget). They differ only in where a round's episodes go: the round robin cycles through
every pair of policies in turn, the adaptive plan shares them among the unresolved adjacent
pairs by need (:func:`socialgym_benchmarks.tournament.adaptive.allocate`). An episode is one battle won
by the Bradley–Terry probability of the planted Elo gap.

Printed per design, over ``--reps`` repetitions: the median (and mean) episodes at the stop,
the share of runs that resolved within the budget, the *error* (runs in which some resolved
adjacent pair has the planted order reversed, or equal planted strengths) and the coverage of the reported intervals at
the stop: each adjacent pair's Elo difference and each policy's Elo against the planted ones,
at the corrected levels (and, to show what the correction is for, the same intervals at the
uncorrected 95%). The null check (``--planted null``: all strengths equal) must stop on budget
with errors at most 5%.

    python -m socialgym_benchmarks.studies.adaptive_vs_round_robin --reps 100
"""
from __future__ import annotations

import argparse
import itertools
from collections import Counter

import numpy as np

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.tournament import adaptive

PLANTED = {"spread": (1400.0, 1250.0, 1150.0, 1000.0, 850.0, 700.0),
           "null": (1000.0, 1000.0, 1000.0, 1000.0)}
BUDGETS = {"spread": 8000, "null": 2000}     # the round robin resolves "spread" well within its budget
DESIGNS = ("adaptive", "round-robin")
BLOCK = 2               # a two-seat game: a block is one side rotation


def _battles(players, episodes) -> bt.Battles:
    win = np.array([w for w, _ in episodes], dtype=np.int64)
    lose = np.array([l for _, l in episodes], dtype=np.int64)
    return bt.Battles(list(players), win, lose, np.arange(win.size, dtype=np.int64), win.size)


def run_once(planted, design: str, budget: int, rng: np.random.Generator, level: float = adaptive.LEVEL,
             growth: float = adaptive.GROWTH, even_share: float = adaptive.EVEN_SHARE,
             explore_share: float = adaptive.EXPLORE_SHARE) -> dict:
    """One simulated tournament; returns its episodes, stop, and what the intervals covered."""
    planted = np.asarray(planted, dtype=float)
    k = planted.size
    players = [f"p{i}" for i in range(k)]
    index = {p: i for i, p in enumerate(players)}
    pairs = list(itertools.combinations(range(k), 2))
    schedule = adaptive.look_schedule(len(pairs) * adaptive.FIRST_PER_PAIR, budget, growth)
    levels = adaptive.Levels.of(level, len(schedule), k)
    episodes: list = []
    cursor = 0

    def play(a: int, b: int, n: int) -> None:
        p = 1.0 / (1.0 + bt.BASE ** (-(planted[a] - planted[b]) / bt.SCALE))
        for _ in range(n):
            episodes.append((a, b) if rng.random() < p else (b, a))

    for a, b in pairs:
        play(a, b, adaptive.FIRST_PER_PAIR)
    looks = 1
    while True:
        battles = _battles(players, episodes)
        state = adaptive.assess(battles, levels.pairs)
        if state.resolved or looks >= len(schedule) or len(episodes) >= budget:
            break
        room = min(budget - len(episodes), max(schedule[looks] - len(episodes), BLOCK))
        if design == "adaptive":
            played = Counter((players[min(a, b)], players[max(a, b)]) for a, b in episodes)
            chosen = [(index[u], index[l]) for u, l in
                      adaptive.plan_round(state, played, room // BLOCK, explore_share, even_share)]
        else:
            chosen = [pairs[(cursor + i) % len(pairs)] for i in range(room // BLOCK)]
            cursor += len(chosen)
        if not chosen:
            break
        for a, b in chosen:
            play(a, b, BLOCK)
        looks += 1
    final = adaptive.intervals_at_stop(battles, state, levels)
    naive = adaptive.intervals_at_stop(battles, state, adaptive.Levels(level, level))
    planted_elo = planted - planted.mean() + bt.ANCHOR

    def covered(report) -> tuple[list, list]:
        pair_hits = [_inside(p["lo"], p["hi"], planted[index[p["upper"]]] - planted[index[p["lower"]]])
                     for p in report["pairs"]]
        rating_hits = [_inside(r["lo"], r["hi"], planted_elo[index[p]]) for p, r in report["ratings"].items()]
        return pair_hits, rating_hits
    # a claimed order that is reversed, or claimed between equal strengths
    wrong = any(p.resolved and planted[index[p.upper]] <= planted[index[p.lower]] for p in state.pairs)
    return {"episodes": len(episodes), "resolved": state.resolved, "looks": looks, "wrong": wrong,
            "corrected": covered(final), "uncorrected": covered(naive)}


def _inside(lo, hi, value) -> bool:
    return (lo is None or lo <= value) and (hi is None or value <= hi)


def compare(planted, reps: int, budget: int, seed: int = 0, designs=DESIGNS,
            even_share: float = adaptive.EVEN_SHARE, explore_share: float = adaptive.EXPLORE_SHARE) -> dict:
    """{design: summary row} over ``reps`` repetitions (each design its own seeded stream)."""
    out = {}
    for d, design in enumerate(designs):
        rng = np.random.default_rng([seed, d])
        runs = [run_once(planted, design, budget, rng, even_share=even_share, explore_share=explore_share)
                for _ in range(reps)]
        used = np.array([r["episodes"] for r in runs])
        row = {"median_episodes": float(np.median(used)), "mean_episodes": float(used.mean()),
               "resolved": float(np.mean([r["resolved"] for r in runs])),
               "error": float(np.mean([r["wrong"] for r in runs]))}
        for kind in ("corrected", "uncorrected"):
            row[f"{kind}_pair_coverage"] = float(np.mean([h for r in runs for h in r[kind][0]]))
            row[f"{kind}_rating_coverage"] = float(np.mean([h for r in runs for h in r[kind][1]]))
        out[design] = row
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--budget", type=int, default=None, help="episodes (default: per planted set, BUDGETS)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--planted", default=",".join(PLANTED), help=f"which planted sets: {', '.join(PLANTED)}")
    parser.add_argument("--even-share", type=float, default=adaptive.EVEN_SHARE,
                        help="adaptive: share of a round spread evenly over the open pairs (0: all by need)")
    parser.add_argument("--explore-share", type=float, default=adaptive.EXPLORE_SHARE,
                        help="adaptive: share of a round given to the least-played pairs of all")
    parser.add_argument("--designs", default=",".join(DESIGNS))
    args = parser.parse_args(argv)
    for name in args.planted.split(","):
        planted, budget = PLANTED[name], args.budget or BUDGETS[name]
        k = len(planted)
        schedule = adaptive.look_schedule(k * (k - 1) // 2 * adaptive.FIRST_PER_PAIR, budget)
        levels = adaptive.Levels.of(adaptive.LEVEL, len(schedule), k)
        print(f"planted {name}: Elo {', '.join(f'{x:.0f}' for x in planted)}; budget {budget} episodes, "
              f"{len(schedule)} planned looks, level per look {levels.pairs:.5f} (pairs), {levels.ratings:.4f} (Elo); "
              f"{args.reps} repetitions, seed {args.seed}, adaptive "
              f"explore share {args.explore_share}, even share {args.even_share}")
        print(f"{'design':<12} {'median eps':>10} {'mean eps':>9} {'resolved':>8} {'error':>6} "
              f"{'pair cov':>8} {'Elo cov':>8} {'pair cov 95% uncorr.':>20} {'Elo cov 95% uncorr.':>19}")
        for design, row in compare(planted, args.reps, budget, args.seed, args.designs.split(","), args.even_share,
                                        args.explore_share).items():
            print(f"{design:<12} {row['median_episodes']:>10.0f} {row['mean_episodes']:>9.0f} "
                  f"{100 * row['resolved']:>7.0f}% {100 * row['error']:>5.1f}% "
                  f"{100 * row['corrected_pair_coverage']:>7.1f}% {100 * row['corrected_rating_coverage']:>7.1f}% "
                  f"{100 * row['uncorrected_pair_coverage']:>19.1f}% {100 * row['uncorrected_rating_coverage']:>18.1f}%")
        print()


if __name__ == "__main__":
    main()
