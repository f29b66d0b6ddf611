"""A frozen reference pool: rate a new policy against shipped reference logs, offline.

The pool (``socialgym_benchmarks/tournament/reference/``) is a round robin of cheap offline policies
(:data:`POLICIES`) on a few two-seat games (:data:`GAMES`), its logs, and ``manifest.json``:
the settings, each log's SHA-256, and the references' Elo (the leaderboard's pooled Bradley–
Terry fit of those logs, mean 1000). It is made by::

    python -m socialgym_benchmarks.tournament.reference build

``socialgym rate SPEC --against reference`` plays SPEC against each reference only (every
game, ``--episodes`` per reference, sides rotated, the round robin's seeds), then fits SPEC's one
strength with the references' Elo held fixed as anchors (they are not re-fitted): the Firth-
penalised Bradley–Terry likelihood in SPEC's strength alone, its profile-likelihood interval
(chi2 with one degree of freedom, times the episodes' design effect). The interval is
conditional on the anchors: it does not carry the references' own uncertainty.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2

from socialgym_env.atomic import atomic_write_json
from socialgym_env.errors import SocialGymError

from socialgym_benchmarks import ratings as bt

POOL_DIR = Path(__file__).parent / "reference"
POLICIES = ("scripted:heuristic", "scripted:random", "scripted:tit_for_tat")
GAMES = ("kuhn_poker", "prisoners_dilemma", "chicken")
CONFIGS = {"prisoners_dilemma": {"rounds": 3}, "chicken": {"rounds": 3}}
EPISODES = 30           # per pair of references and game (the pool); per reference and game (a rating)
SEED = 0
MANIFEST = "manifest.json"
BUILD_COMMAND = "python -m socialgym_benchmarks.tournament.reference build"
REACH = bt.PROFILE_REACH


class ReferencePoolError(SocialGymError):
    """The reference pool is missing, incomplete or altered."""


@dataclass
class Pool:
    folder: Path
    manifest: dict

    @property
    def ratings(self) -> dict:
        return self.manifest["ratings"]

    @property
    def log_dir(self) -> Path:
        return self.folder / "logs"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_pool(folder=None) -> Pool:
    """The pool in ``folder`` (default: the shipped one), its logs checked against the manifest."""
    folder = Path(folder) if folder is not None else POOL_DIR
    path = folder / MANIFEST
    if not path.is_file():
        raise ReferencePoolError(f"no reference pool at {folder} (no {MANIFEST}; {BUILD_COMMAND} makes one)")
    try:
        manifest = json.loads(path.read_text())
        files, ratings = manifest["files"], manifest["ratings"]
        if not files or len(ratings) < 2 or not all(isinstance(v, (int, float)) for v in ratings.values()):
            raise ValueError("no logs or fewer than two rated references")
    except (ValueError, KeyError, TypeError) as err:
        raise ReferencePoolError(f"{path} is not a reference manifest ({err}); {BUILD_COMMAND} remakes it") from None
    for name, digest in files.items():
        log = folder / name
        if not log.is_file():
            raise ReferencePoolError(f"reference log {log} is missing; {BUILD_COMMAND} remakes the pool")
        if _sha256(log) != digest:
            raise ReferencePoolError(f"reference log {log} does not match its manifest digest (altered or "
                                     f"corrupt); {BUILD_COMMAND} remakes the pool")
    return Pool(folder, manifest)


def pool_ratings(log_dir: Path) -> dict:
    """The references' Elo from their logs: the leaderboard's pooled fit (competitive games, ties left out)."""
    records, _ = bt.load_records(log_dir)
    battles = bt.collect_battles(records)
    elo = bt.fit_bt(battles.win_matrix())
    return {p: float(elo[i]) for i, p in enumerate(battles.players)}


def build_pool(folder=None, episodes: int = EPISODES, seed: int = SEED, workers: Optional[int] = None) -> Pool:
    """Play the references' round robin and write the pool (logs, manifest) to ``folder``."""
    from . import plan as tour
    folder = Path(folder) if folder is not None else POOL_DIR
    overrides = [f"{g}.{k}={v}" for g, config in CONFIGS.items() for k, v in config.items()]
    with tempfile.TemporaryDirectory() as scratch:
        tour.tournament(GAMES, POLICIES, episodes=episodes, seed=seed, out=scratch, workers=workers,
                        config_overrides=overrides, progress=False)
        if (folder / "logs").exists():
            shutil.rmtree(folder / "logs")
        shutil.copytree(Path(scratch) / "logs", folder / "logs")
    files = {f"logs/{p.name}": _sha256(p) for p in sorted((folder / "logs").glob("*.jsonl"))}
    manifest = {"command": BUILD_COMMAND, "policies": list(POLICIES), "games": list(GAMES), "configs": CONFIGS,
                "episodes_per_combination": episodes, "seed": seed, "ties": "exclude",
                "ratings": pool_ratings(folder / "logs"), "files": files}
    atomic_write_json(folder / MANIFEST, manifest, indent=1)
    return Pool(folder, manifest)


# ----------------------------------------------------------------------------- the anchored fit
def anchored_fit(battles: bt.Battles, newcomer: str, anchors: dict, level: float = 0.95) -> dict:
    """The newcomer's Elo with the ``anchors`` (competitor -> Elo) fixed: Firth-penalised
    maximum likelihood in its one strength, and the profile-likelihood interval (an end
    beyond ``REACH`` Elo of the estimate is unbounded). Battles between anchors are ignored
    (they carry nothing about the newcomer)."""
    index = battles.players.index(newcomer)
    mine = (battles.winner == index) | (battles.loser == index)
    others = np.where(battles.winner[mine] == index, battles.loser[mine], battles.winner[mine])
    won = battles.winner[mine] == index
    unknown = sorted({battles.players[i] for i in others} - set(anchors))
    if unknown:
        raise ReferencePoolError(f"no anchor rating for {', '.join(unknown)}")
    anchor = np.array([anchors[battles.players[i]] for i in others], dtype=float)
    if anchor.size == 0:
        raise ReferencePoolError(f"{newcomer} has no decisive battle against a reference (all draws or failures)")
    slope = bt.LN_BASE / bt.SCALE

    def penalised(elo: float) -> float:
        """Minus the log-likelihood, minus half the log Fisher information (Firth, one parameter)."""
        d = slope * (elo - anchor)
        p = 0.5 * (1.0 + np.tanh(0.5 * d))
        loglik = -(np.logaddexp(0.0, -d[won]).sum() + np.logaddexp(0.0, d[~won]).sum())
        info = slope ** 2 * (p * (1 - p)).sum()
        return -loglik - 0.5 * math.log(max(info, 1e-300))

    centre = float(anchor.mean())
    fit = minimize_scalar(penalised, bounds=(centre - REACH, centre + REACH), method="bounded",
                          options={"xatol": 1e-3})
    estimate, best = float(fit.x), float(fit.fun)
    contrast = np.zeros(len(battles.players))
    contrast[index] = 1.0
    contrast[[i for i, p in enumerate(battles.players) if p in anchors and p != newcomer]] -= 1.0 / len(anchors)
    cutoff = chi2.ppf(level, 1) * bt.design_effect(battles, contrast)

    def excess(elo: float) -> float:
        return 2.0 * (penalised(elo) - best) - cutoff

    ends = []
    for sign in (-1.0, 1.0):
        far = estimate + sign * REACH
        ends.append(brentq(excess, estimate, far, xtol=0.1) if excess(far) > 0 else sign * math.inf)
    return {"policy": newcomer, "elo": estimate, "lo": ends[0], "hi": ends[1], "level": level,
            "battles": int(mine.sum()), "battle_wins": int(won.sum())}


def rate_against(spec: str, pool: Pool, episodes: int = EPISODES, seed: int = SEED, out=None,
                 workers: Optional[int] = None, progress: bool = True, level: float = 0.95) -> dict:
    """Play ``spec`` against every reference on the pool's games (logs under ``out/logs``,
    resumable) and return its anchored rating."""
    import socialgym_env
    from socialgym_agents.registry import check_spec

    from . import plan as tour
    games, references = pool.manifest["games"], pool.manifest["policies"]
    check_spec(spec, games)
    if spec in references:
        raise ReferencePoolError(f"{spec} is a reference already (rated {pool.ratings[spec]:.0f})")
    configs = pool.manifest.get("configs", {})
    jobs = []
    for game in games:
        env = socialgym_env.make(game, **configs.get(game, {}))
        layout = tour.game_layout(env)
        for ref in references:
            combo = (spec, ref)
            count = math.ceil(episodes / len(combo)) * len(combo)
            jobs += tour.combo_jobs(env, layout, combo, range(count), configs.get(game, {}), seed,
                                    tournament="reference")
    out = Path(out) if out is not None else Path("runs") / "rate"
    tour.run_tournament(jobs, out, workers=workers or 1, progress=progress, pool_seed=seed, leaderboard=False)
    wanted = {job.episode_id for job in jobs}
    logged, skipped = bt.load_records(out / "logs")
    records = [r for r in logged if r.get("episode_id") in wanted]
    battles = bt.collect_battles(records, players=[spec] + list(references))
    result = anchored_fit(battles, spec, pool.ratings, level)
    result.update(episodes=len(records), planned=len(jobs), logs=str(out / "logs"), skipped=skipped)
    return result


def full_round_robin_elo(pool: Pool, log_dir, spec: str) -> float:
    """``spec``'s Elo from the round robin the pool and its rating logs make together (every
    pair played), all fitted jointly as the leaderboard does, on the pool's scale (the
    references' mean at the anchors' mean): what the anchored rating should agree with."""
    records = bt.load_records(pool.log_dir)[0] + bt.load_records(log_dir)[0]
    battles = bt.collect_battles(records)
    elo = bt.fit_bt(battles.win_matrix())
    refs = [i for i, p in enumerate(battles.players) if p in pool.ratings]
    return float(elo[battles.players.index(spec)] - elo[refs].mean() + np.mean(list(pool.ratings.values())))


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="Build the reference pool (logs and manifest), or check a "
                                                 "rating against it with a full round robin.")
    parser.add_argument("action", choices=["build", "check"])
    parser.add_argument("spec", nargs="?", help="check: the policy to rate")
    parser.add_argument("--out", type=Path, default=None, help="build: the pool folder; check: the rating's logs")
    parser.add_argument("--episodes", type=int, default=EPISODES, help="per pair of policies and game")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.action == "check":
        pool = load_pool()
        out = args.out or Path("runs") / "rate"
        rated = rate_against(args.spec, pool, args.episodes, args.seed, out, progress=False)
        print(f"{args.spec}: anchored Elo {rated['elo']:.0f} [{rated['lo']:.0f}, {rated['hi']:.0f}] from "
              f"{rated['episodes']} episodes against the references; full round robin (the pool's "
              f"episodes and these, fitted jointly): {full_round_robin_elo(pool, out / 'logs', args.spec):.0f}")
        return
    args.out = args.out or POOL_DIR
    pool = build_pool(args.out, args.episodes, args.seed)
    for policy, rating in sorted(pool.ratings.items(), key=lambda kv: -kv[1]):
        print(f"{policy:<24} {rating:7.1f}")
    print(f"reference pool: {args.out} ({len(pool.manifest['files'])} logs)")


if __name__ == "__main__":
    main()
