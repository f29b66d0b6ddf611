"""Coverage of the leaderboard's 95% Elo intervals, by simulation with planted strengths.

Each repetition plays ``episodes`` simulated episodes among four policies of planted Elo
(mean 1000): half of them two-seat games (one battle, decided by the Bradley–Terry
probability), half three-seat free-for-alls of three distinct policies (the winner drawn with
probability proportional to ``10 ** (elo / 400)``, Plackett–Luce's first pick, so any two
seats compare as Bradley–Terry says; the winner beats both others, the two losers tie and
are left out, as ``--ties exclude`` does). Each policy's interval is checked against its
planted Elo; every (repetition, policy) counts once.

Methods: ``profile`` (the leaderboard's default: profile likelihood, episode design effect,
:func:`socialgym_benchmarks.ratings.profile_elo_intervals`), ``bootstrap-episode`` and
``bootstrap-battle`` (the percentile bootstrap around the penalised fit, as the paper).

Role gaps (a second table): a two-team game (two seats of the alt side against three of the
main side, every cross-team pair a battle, the whole team winning or losing together: six
battles an episode that move as one); every ordered pair of three policies plays
``--role-episodes`` episodes. Side-blind policies (planted gap 0) should see their gap's 95%
interval cover 0 about 95% of the time; a side-split policy (plays like a 1200 policy on the
alt side, like an 800 one on the main side: planted gap +400) should get a positive gap whose
interval excludes 0.

Games-equal overall (a third table): the same planted strengths in three free-for-all games of
2, 3 and 4 seats (1, 2 and 3 battles an episode, so the games' weights differ), the episodes
split evenly over them; the games-equal fit's interval (``profile``: the weighted profile
likelihood, the leaderboard's default; ``bootstrap``: by episode within each game) is checked
against the planted Elo, which is the games-equal estimand when every game has the same strengths.

    python -m socialgym_benchmarks.studies.interval_coverage --reps 200

prints all three tables (with the median width, and how often a bound is unbounded);
``--tables pooled,games-equal,roles`` picks some.
"""
from __future__ import annotations

import argparse
import itertools
from typing import Optional

import numpy as np

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.ratings import games_equal_fit

PLANTED = {"near": (1075.0, 1025.0, 975.0, 925.0), "spread": (1300.0, 1100.0, 900.0, 700.0)}
SIZES = (12, 50, 200)
METHODS = ("profile", "bootstrap-episode", "bootstrap-battle")
TABLES = ("pooled", "games-equal", "roles")


def simulate_battles(planted: np.ndarray, episodes: int, rng: np.random.Generator,
                     seats_per_episode: Optional[int] = None) -> bt.Battles:
    """Battles of ``episodes`` simulated episodes (see the module docstring): two and three
    seats in turn, or ``seats_per_episode`` seats in every episode."""
    k = planted.size
    strength = 10.0 ** ((planted - planted.mean()) / bt.SCALE)
    win, lose, ep = [], [], []
    for e in range(episodes):
        size = seats_per_episode or (2 if e % 2 == 0 else 3)
        seats = rng.choice(k, size=size, replace=False)
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


GAME_SEATS = (2, 3, 4)       # the games of the games-equal table: 1, 2 and 3 battles an episode
GAMES_EQUAL_METHODS = ("profile", "bootstrap")


def simulate_games(planted: np.ndarray, episodes: int, rng: np.random.Generator) -> list:
    """``episodes`` split as evenly as they go over three games of 2, 3 and 4 seats (a
    free-for-all each, as :func:`simulate_battles`), so the games make 1, 2 and 3 battles an
    episode and the games-equal weights differ; the same planted strengths in every game, so
    the games-equal estimand is the planted Elo."""
    sizes = [episodes // len(GAME_SEATS) + (g < episodes % len(GAME_SEATS)) for g in range(len(GAME_SEATS))]
    return [simulate_battles(planted, n, rng, seats) for n, seats in zip(sizes, GAME_SEATS)]


def games_equal_coverage(planted, episodes: int, reps: int, methods=GAMES_EQUAL_METHODS, n_boot: int = 200,
                         seed: int = 0) -> dict:
    """As :func:`coverage`, for the games-equal fit (:func:`socialgym_benchmarks.ratings.games_equal_fit`)
    over the games of :func:`simulate_games`; a policy without battles (possible at 12
    episodes) counts as not covered."""
    planted = np.asarray(planted, dtype=float)
    rng = np.random.default_rng(seed)
    names = [f"p{i}" for i in range(planted.size)]
    hits = {m: [] for m in methods}
    widths = {m: [] for m in methods}
    for rep in range(reps):
        parts = simulate_games(planted, episodes, rng)
        for m in methods:
            fit = games_equal_fit(parts, names, {"C": bt.C_DEFAULT, "interval": m, "n_boot": n_boot,
                                                 "by": "episode", "seed": rep}, "coverage")
            for name, target in zip(names, planted):
                row = fit.get(name, {"lo": None, "hi": None})
                lo = -np.inf if row["lo"] is None else row["lo"]
                hi = np.inf if row["hi"] is None else row["hi"]
                hits[m].append(name in fit and lo <= target <= hi)
                widths[m].append(hi - lo if name in fit else np.nan)
    out = {}
    for m in methods:
        width = np.asarray(widths[m])
        out[m] = {"coverage": float(np.mean(hits[m])), "median_width": float(np.nanmedian(width)),
                  "unbounded": float(np.mean(np.isinf(width)))}
    return out


SIDE_BLIND = {"a": {"alt": 1100.0, "main": 1100.0}, "b": {"alt": 1000.0, "main": 1000.0},
              "c": {"alt": 900.0, "main": 900.0}}
SIDE_SPLIT = {"split": {"alt": 1200.0, "main": 800.0}, "strong": {"alt": 1200.0, "main": 1200.0},
              "weak": {"alt": 800.0, "main": 800.0}}


def team_game_record(alt_policy: str, main_policy: str, alt_wins: bool, index: int) -> dict:
    """One episode log record of a hidden-role team game (the Werewolves layout: two wolves,
    the alt side, against three villagers)."""
    roster = ([{"agent": f"player_{s}", "policy": alt_policy, "team": "wolves", "role": "Werewolf"} for s in range(2)]
              + [{"agent": f"player_{s}", "policy": main_policy, "team": "village", "role": "Villager"}
                 for s in range(2, 5)])
    reward = {f"player_{s}": (1.0 if (s < 2) == alt_wins else -1.0) for s in range(5)}
    return {"episode_id": f"{alt_policy}-{main_policy}-{index}", "game": "werewolves", "finished": True,
            "roster": roster, "rewards": reward, "scores": reward}


def team_game_records(strength: dict, episodes: int, rng: np.random.Generator) -> list:
    """Every ordered pair of policies (alt side, main side) ``episodes`` times; the alt side wins
    with the BT probability of its policy's alt Elo over the main side's policy's main Elo."""
    records = []
    for alt, main in itertools.permutations(strength, 2):
        p = 1 / (1 + 10 ** (-(strength[alt]["alt"] - strength[main]["main"]) / bt.SCALE))
        records += [team_game_record(alt, main, bool(rng.random() < p), i) for i in range(episodes)]
    return records


def side_label(seat: dict) -> str:
    return f"{seat['policy']}|{'alt' if seat['team'] == 'wolves' else 'main'}"


def gap_intervals(records: list) -> dict:
    """{policy: (gap, lo, hi)}: the fitted gap Alt − Main and its profile-likelihood interval."""
    battles = bt.collect_battles(records, side_label)
    elo = bt.fit_bt(battles.win_matrix())
    out = {}
    for policy in sorted({name.rpartition("|")[0] for name in battles.players}):
        alt, main = battles.players.index(f"{policy}|alt"), battles.players.index(f"{policy}|main")
        contrast = np.zeros(len(battles.players))
        contrast[alt], contrast[main] = 1.0, -1.0
        out[policy] = (float(elo[alt] - elo[main]), *bt.contrast_interval(battles, contrast, elo))
    return out


def role_gap_coverage(strength: dict, episodes: int, reps: int, seed: int = 0) -> dict:
    """Per policy over ``reps`` repetitions: coverage of the planted gap, how often the interval
    excludes 0, the mean fitted gap."""
    rng = np.random.default_rng(seed)
    rows = {p: {"covered": [], "excludes_0": [], "gap": []} for p in strength}
    for _ in range(reps):
        for policy, (gap, lo, hi) in gap_intervals(team_game_records(strength, episodes, rng)).items():
            planted = strength[policy]["alt"] - strength[policy]["main"]
            rows[policy]["covered"].append(lo <= planted <= hi)
            rows[policy]["excludes_0"].append(not lo <= 0 <= hi)
            rows[policy]["gap"].append(gap)
    return {p: {k: float(np.mean(v)) for k, v in row.items()} for p, row in rows.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--boot", type=int, default=200, help="bootstrap resamples a repetition")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="episode counts (\"\": role gaps only)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--role-episodes", type=int, default=8, help="episodes per ordered pair of policies")
    parser.add_argument("--tables", default=",".join(TABLES), help=f"which tables (of {', '.join(TABLES)})")
    args = parser.parse_args(argv)
    tables = args.tables.split(",")
    if set(tables) - set(TABLES):
        parser.error(f"--tables: unknown {', '.join(sorted(set(tables) - set(TABLES)))} (known: {', '.join(TABLES)})")
    methods = args.methods.split(",")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    print(f"seed {args.seed}")
    if "pooled" in tables:
        _pooled_table(args, methods, sizes)
    if "games-equal" in tables:
        _games_equal_table(args, sizes)
    if "roles" in tables:
        _role_table(args)


COVERAGE_HEADER = f"{'planted':<8} {'episodes':>8} {'method':<18} {'coverage':>8} {'median width':>12} {'unbounded':>9}"


def _print_rows(planted_name: str, size: int, table: dict) -> None:
    for method, row in table.items():
        print(f"{planted_name:<8} {size:>8} {method:<18} {100 * row['coverage']:>7.1f}% {row['median_width']:>12.0f} "
              f"{100 * row['unbounded']:>8.1f}%")


def _pooled_table(args, methods, sizes) -> None:
    print(f"coverage of the 95% Elo interval, {args.reps} repetitions x 4 policies")
    print(COVERAGE_HEADER)
    for name, planted in PLANTED.items():
        for size in sizes:
            table = coverage(planted, size, args.reps, methods, args.boot, args.seed)
            _print_rows(name, size, table)


def _games_equal_table(args, sizes) -> None:
    print(f"\ngames-equal overall (games of {', '.join(map(str, GAME_SEATS))} seats, episodes split evenly), "
          f"coverage of the 95% Elo interval, {args.reps} repetitions x 4 policies")
    print(COVERAGE_HEADER)
    for name, planted in PLANTED.items():
        for size in sizes:
            table = games_equal_coverage(planted, size, args.reps, GAMES_EQUAL_METHODS, args.boot, args.seed)
            _print_rows(name, size, table)


def _role_table(args) -> None:
    print(f"\nrole gap Alt − Main, profile interval, {args.reps} repetitions, {args.role_episodes} episodes per "
          f"ordered pair of 3 policies ({6 * args.role_episodes} episodes, 6 battles each)")
    print(f"{'policy':<8} {'planted gap':>11} {'mean gap':>8} {'covers planted':>14} {'excludes 0':>10}")
    for strength in (SIDE_BLIND, SIDE_SPLIT):
        for policy, row in role_gap_coverage(strength, args.role_episodes, args.reps, args.seed).items():
            planted = strength[policy]["alt"] - strength[policy]["main"]
            print(f"{policy:<8} {planted:>+11.0f} {row['gap']:>+8.0f} {100 * row['covered']:>13.1f}% "
                  f"{100 * row['excludes_0']:>9.1f}%")


if __name__ == "__main__":
    main()

