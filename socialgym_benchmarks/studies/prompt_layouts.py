"""The compact prompt against the paper's, paired: does ``template=compact`` play worse?

Two arms of the embedded model, the same spec but for ``template=`` (the paper arm is the demo's
``--agents`` spec as it is, the compact arm adds ``template=compact``), play the demo preset's
games against the scripted baselines (``scripted:heuristic``, ``scripted:random``) with common
random numbers that are really common: the round robin is planned once with a placeholder in
the model's place (so the episode seeds, deals, seatings and opponents do not depend on the
spec), and every planned episode with the model is played twice, once by each arm; the
opponents and the sampling seeds (per seat, from the episode's seed) are the same in both. The
episodes of the scripted pair are played once and shared. Logs: ``OUT/logs``, episode ids
``paper|ID`` and ``compact|ID`` (``ID`` the round robin's), resumable (logged ids are skipped).

The estimate (:func:`paired_difference`): the Bradley-Terry fit of all the battles (both arms,
both opponents, the shared scripted pair), Elo of compact minus Elo of paper, and its percentile
interval from a bootstrap that resamples planned episodes (units) with both arms' episodes of a
unit moving together: the pairing is kept, each episode counted once. A unit one arm did not
finish is left out of both.

    python -m socialgym_benchmarks.studies.prompt_layouts size --drop 50
    python -m socialgym_benchmarks.studies.prompt_layouts play --out runs/prompt_layouts --episodes 2
    python -m socialgym_benchmarks.studies.prompt_layouts compare --out runs/prompt_layouts
    python -m socialgym_benchmarks.studies.prompt_layouts check --reps 200

``check`` runs the estimator on simulated paired outcomes with a planted difference and with
none (the null) and prints how often each interval covers the truth and excludes 0.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from scipy.stats import norm

from socialgym_agents.specs import AgentSpec

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.tournament import plan as tour

# make demo's --agents model spec (the Makefile's demo line) without its template=compact: the paper arm
DEMO_MODEL = "smollm2?dtype=auto&temperature=0.7&context=2048&batch_size=8"
OPPONENTS = ("scripted:heuristic", "scripted:random")
ARMS = ("paper", "compact")
PLACEHOLDER = "model-seat"        # the model's place in the plan (no known kind: not scripted), so seeds are spec-free
SKIPPED_GAMES = ("liars_dice",)                # the demo plays it by its own roster
ELO_PER_LOGIT = bt.SCALE / math.log(bt.BASE)   # 173.7 Elo per unit of log-odds


def arm_specs(model: str = DEMO_MODEL) -> dict:
    """{arm: spec}: the model as given (paper) and with ``template=compact``."""
    spec = AgentSpec.of(model)
    if any(key == "template" for key, _ in spec.options):
        raise ValueError(f"{model!r} sets template= already; give the model without it")
    return {"paper": str(spec), "compact": str(spec.with_option("template", "compact"))}


def paired_jobs(games: Sequence[str], model: str = DEMO_MODEL, episodes: int = tour.DEMO_EPISODES, seed: int = 0,
                scripted_episodes: int = tour.DEMO_SCRIPTED_EPISODES) -> list:
    """The round robin of the demo preset (placeholder in the model's place), each model
    episode once per arm (id ``ARM|ID``), the scripted pair's episodes once."""
    specs = arm_specs(model)
    configs = tour.game_configs(games, {}, preset="demo")
    planned = tour.plan_tournament(games, [PLACEHOLDER, *OPPONENTS], episodes, seed, configs,
                                   scripted_episodes=scripted_episodes)
    jobs = []
    for job in planned:
        if PLACEHOLDER not in job.seats:
            jobs.append(job)
            continue
        for arm, spec in specs.items():
            seats = [spec if seat == PLACEHOLDER else seat for seat in job.seats]
            jobs.append(replace(job, seats=seats, episode_id=f"{arm}|{job.episode_id}",
                                tags={**job.tags, "arm": arm, "unit": job.episode_id}))
    return jobs


def _unit_of(episode_id: str) -> tuple:
    """(arm or None, the planned episode's id) of a logged id."""
    arm, sep, rest = episode_id.partition("|")
    return (arm, rest) if sep and arm in ARMS else (None, episode_id)


def paired_units(records: Sequence[dict]) -> tuple[list, list]:
    """The records kept (competitive games; a model unit only when both arms finished it) and,
    for each, the index of its unit."""
    by_unit: dict = {}
    for record in records:
        if bt.game_info(record["game"]).get("cooperative"):
            continue
        arm, unit = _unit_of(record["episode_id"])
        by_unit.setdefault(unit, {})[arm] = record
    kept, units = [], []
    for unit, arms in by_unit.items():
        if None not in arms and set(arms) != set(ARMS):
            continue                    # one arm missing: the pair is incomplete, drop both
        index = len(set(units))
        for record in arms.values():
            kept.append(record)
            units.append(index)
    return kept, units


def paired_difference(records: Sequence[dict], paper: str, compact: str, n_boot: int = 2000, seed: int = 0,
                      level: float = 0.95) -> dict:
    """Elo of ``compact`` minus Elo of ``paper`` from the paired runs' ``records`` (one fit of
    every battle), with the percentile interval of the bootstrap over units (both arms of a
    unit resampled together)."""
    kept, units = paired_units(records)
    battles = bt.collect_battles(kept, players=[paper, compact])
    unit_of_episode = np.asarray(units, dtype=np.int64)
    n_units = int(unit_of_episode.max()) + 1 if units else 0
    paired = bt.Battles(battles.players, battles.winner, battles.loser, unit_of_episode[battles.episode], n_units)
    if not paired.n:
        raise ValueError("no battles to compare: no unit was finished by both arms")
    elo = bt.fit_bt(paired.win_matrix())
    samples = bt.fit_bt_batch(bt.bootstrap_wins(paired, n_boot, "episode", seed), start=elo)
    diffs = samples[:, 1] - samples[:, 0]
    alpha = (1 - level) / 2
    lo, hi = np.percentile(diffs, [100 * alpha, 100 * (1 - alpha)])
    wins = paired.win_matrix()
    arms = {arm: {"battles": int(wins[i].sum() + wins[:, i].sum()), "won": int(wins[i].sum())}
            for i, arm in enumerate(ARMS)}
    return {"difference": float(elo[1] - elo[0]), "lo": float(lo), "hi": float(hi), "level": level,
            "units": n_units, "model_units": len({u for r, u in zip(kept, units) if _unit_of(r["episode_id"])[0]}),
            "discordant": discordant_units(kept, {paper: "model", compact: "model"}),
            "arms": arms, "elo": {p: float(e) for p, e in zip(paired.players, elo)}}


def discordant_units(records: Sequence[dict], same: dict) -> int:
    """Model units whose two arms' battles came out differently (``same`` names both arms'
    specs alike): only these carry information on the difference; with none, every bootstrap
    resample gives 0 and the interval is [0, 0] whatever the size of a real difference."""
    outcomes: dict = {}
    for record in records:
        arm, unit = _unit_of(record["episode_id"])
        if arm is not None:
            pairs = sorted((same.get(w, w), same.get(l, l)) for w, l in bt.episode_pairs(record))
            outcomes.setdefault(unit, []).append(pairs)
    return sum(1 for arms in outcomes.values() if len(arms) == 2 and arms[0] != arms[1])


# ----------------------------------------------------------------------------- sizing
def battles_needed(drop: float, win_rate: float = 0.4, correlation: float = 0.0, level: float = 0.95,
                   power: float = 0.8) -> int:
    """Battles per arm for the interval of the difference to lie above ``-drop`` with
    probability ``power`` when the arms are equal (normal approximation: an arm's Elo against
    fixed opponents at ``win_rate`` has variance ELO_PER_LOGIT^2 / (n p (1 - p)); the paired
    difference 2 (1 - correlation) times that)."""
    z = norm.ppf(1 - (1 - level) / 2) + norm.ppf(power)
    per_battle = ELO_PER_LOGIT ** 2 / (win_rate * (1 - win_rate))
    return math.ceil(2 * (1 - correlation) * per_battle * z ** 2 / drop ** 2)


def detectable_drop(battles: int, win_rate: float = 0.4, correlation: float = 0.0, level: float = 0.95,
                    power: float = 0.8) -> float:
    """The smallest drop ``battles`` per arm rule out with ``power`` (inverse of :func:`battles_needed`)."""
    z = norm.ppf(1 - (1 - level) / 2) + norm.ppf(power)
    return z * ELO_PER_LOGIT * math.sqrt(2 * (1 - correlation) / (win_rate * (1 - win_rate) * battles))


# ----------------------------------------------------------------------------- planted / null
def simulated_records(rng: np.random.Generator, units: int, planted: float, model: float = 950.0,
                      opponents: Sequence[float] = (1150.0, 950.0), scripted_units: int = 0,
                      coupling: float = 0.5) -> list:
    """Two-seat records of paired units: each unit's opponent drawn, both arms against it; in a
    ``coupling`` share of the units the arms' outcomes are drawn from one shared uniform (the
    common deal decides: they differ only where their win probabilities do), in the rest each
    arm draws its own (another prompt, other moves); the compact arm ``planted`` Elo off the
    paper arm."""
    names = {"paper": "arm:paper", "compact": "arm:compact"}
    strength = {"paper": model, "compact": model + planted}
    records = []

    def record(episode_id: str, winner: str, loser: str) -> dict:
        return {"episode_id": episode_id, "game": "prisoners_dilemma", "rewards": {"a": 1.0, "b": -1.0},
                "roster": [{"agent": "a", "policy": winner}, {"agent": "b", "policy": loser}]}
    for u in range(units):
        which = int(rng.integers(len(opponents)))
        opponent, shared, coupled = OPPONENTS[which], float(rng.random()), rng.random() < coupling
        for arm, name in names.items():
            p = 1.0 / (1.0 + bt.BASE ** (-(strength[arm] - opponents[which]) / bt.SCALE))
            pair = (name, opponent) if (shared if coupled else rng.random()) < p else (opponent, name)
            records.append(record(f"{arm}|u{u}", *pair))
    p_scripted = 1.0 / (1.0 + bt.BASE ** (-(opponents[0] - opponents[1]) / bt.SCALE))
    for u in range(scripted_units):
        pair = OPPONENTS if rng.random() < p_scripted else OPPONENTS[::-1]
        records.append(record(f"s{u}", *pair))
    return records


def check(planted: float, reps: int, units: int, n_boot: int, seed: int = 0, scripted_units: int = 64) -> dict:
    """Over ``reps`` simulated studies: how often the interval covers ``planted`` and excludes 0,
    and the mean estimate (the estimator's planted-effect or null check)."""
    rng = np.random.default_rng(seed)
    covered = excluded = 0
    estimates = []
    for rep in range(reps):
        result = paired_difference(simulated_records(rng, units, planted, scripted_units=scripted_units),
                                   "arm:paper", "arm:compact", n_boot, seed + rep)
        covered += result["lo"] <= planted <= result["hi"]
        excluded += not result["lo"] <= 0 <= result["hi"]
        estimates.append(result["difference"])
    return {"planted": planted, "reps": reps, "units": units, "coverage": covered / reps,
            "excludes_zero": excluded / reps, "mean_estimate": float(np.mean(estimates))}


# ----------------------------------------------------------------------------- CLI
def _games(text: Optional[str]) -> list:
    games = tour.available_games(text.split(",") if text else None)
    return [g for g in games if g not in SKIPPED_GAMES]


def _print_comparison(result: dict, specs: dict) -> None:
    for arm in ARMS:
        counts = result["arms"][arm]
        print(f"  {arm:8s} {specs[arm]}: {counts['won']} of {counts['battles']} battles won, "
              f"Elo {result['elo'][specs[arm]]:.0f}")
    verdict = "covers 0" if result["lo"] <= 0 <= result["hi"] else ("above 0" if result["lo"] > 0 else "below 0")
    print(f"compact - paper: {result['difference']:+.1f} Elo, {100 * result['level']:.0f}% interval "
          f"[{result['lo']:+.1f}, {result['hi']:+.1f}] ({verdict}); {result['model_units']} paired model "
          f"episodes ({result['discordant']} of them with outcomes that differ between the arms), "
          f"{result['units'] - result['model_units']} shared scripted ones")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    size = commands.add_parser("size", help="battles per arm to rule out a drop")
    size.add_argument("--drop", type=float, default=50.0)
    size.add_argument("--win-rate", type=float, default=0.4)
    size.add_argument("--correlation", type=float, default=0.0)
    for name in ("play", "compare"):
        sub = commands.add_parser(name)
        sub.add_argument("--out", type=Path, default=Path("runs/prompt_layouts"))
        sub.add_argument("--model", default=DEMO_MODEL)
        sub.add_argument("--bootstrap", type=int, default=2000)
        sub.add_argument("--seed", type=int, default=0)
        if name == "play":
            sub.add_argument("--games", default=None, help="comma-separated (default: the demo's, liars_dice aside)")
            sub.add_argument("--episodes", type=int, default=tour.DEMO_EPISODES, help="per combination with the model")
    checker = commands.add_parser("check", help="planted-effect and null checks of the estimator")
    checker.add_argument("--reps", type=int, default=200)
    checker.add_argument("--units", type=int, default=300)
    checker.add_argument("--planted", type=float, default=-100.0)
    checker.add_argument("--bootstrap", type=int, default=500)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args) -> int:
    if args.command == "size":
        print(f"battles per arm to rule out a drop of {args.drop:g} Elo (95% interval, 80% power, win rate "
              f"{args.win_rate:g}, correlation {args.correlation:g}): "
              f"{battles_needed(args.drop, args.win_rate, args.correlation):,}")
        return 0
    if args.command == "check":
        for planted in (args.planted, 0.0):
            row = check(planted, args.reps, args.units, args.bootstrap)
            print(f"planted {planted:+.0f} Elo, {row['units']} units x {row['reps']} reps: mean estimate "
                  f"{row['mean_estimate']:+.1f}, 95% interval covers the planted value {100 * row['coverage']:.1f}%, "
                  f"excludes 0 {100 * row['excludes_zero']:.1f}%")
        return 0
    specs = arm_specs(args.model)
    if args.command == "play":
        jobs = paired_jobs(_games(args.games), args.model, args.episodes, args.seed)
        tour.run_tournament(jobs, args.out, workers=1, pool_seed=args.seed, leaderboard=False)
    records, _ = bt.load_records(args.out / "logs")
    _print_comparison(paired_difference(records, specs["paper"], specs["compact"], args.bootstrap, args.seed), specs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
