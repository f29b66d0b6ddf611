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

import hashlib
import json
import math
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2

from socialgym_env.atomic import atomic_write_json
from socialgym_env.cli_errors import OneLineArgumentParser, check_output_folder, main_of, one_line
from socialgym_env.actions import safe_repr
from socialgym_env.errors import SocialGymError

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.tournament.plan import MAX_EPISODES

POOL_DIR = Path(__file__).parent / "reference"
POLICIES = ("scripted:heuristic", "scripted:random", "scripted:tit_for_tat")
GAMES = ("kuhn_poker", "prisoners_dilemma", "chicken")
CONFIGS = {"prisoners_dilemma": {"rounds": 3}, "chicken": {"rounds": 3}}
EPISODES = 30           # per pair of references and game (the pool); per reference and game (a rating)
SEED = 0
MANIFEST = "manifest.json"
BUILD_COMMAND = "python -m socialgym_benchmarks.tournament.reference build"
REACH = bt.PROFILE_REACH
_LOG_NAME = re.compile(r"logs/[A-Za-z0-9_.-]+\.jsonl")
_DIGEST = re.compile(r"[0-9a-f]{64}")


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
        manifest = json.loads(path.read_text(encoding="utf-8"))
        check_manifest(manifest)
    except (ValueError, KeyError, TypeError) as err:
        raise ReferencePoolError(f"{path} is not a reference manifest ({one_line(err, 200)}); "
                                 f"{BUILD_COMMAND} remakes it") from None
    for name, digest in manifest["files"].items():
        log = folder / name
        if not log.is_file():
            raise ReferencePoolError(f"reference log {log} is missing; {BUILD_COMMAND} remakes the pool")
        if _sha256(log) != digest:
            raise ReferencePoolError(f"reference log {log} does not match its manifest digest (altered or "
                                     f"corrupt); {BUILD_COMMAND} remakes the pool")
    return Pool(folder, manifest)


def _whole(value, name: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number from {low:,} to {high:,}, got {safe_repr(value, 40)}")


def _names(value, name: str) -> list:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{name} must be a list of names, got {safe_repr(value, 60)}")
    if len(set(value)) != len(value):
        raise ValueError(f"{name} names an entry twice")
    return value


def check_manifest(manifest) -> None:
    """Raise ValueError (one line) unless ``manifest`` is one a rating can be played from: every
    field of the type and within the bounds the ``rate`` options have, checked before a single
    episode is played (a NaN rating once failed only after every game; 10**12 episodes ran on)."""
    if not isinstance(manifest, dict):
        raise ValueError(f"expected a JSON object, got {type(manifest).__name__}")
    missing = [k for k in ("policies", "games", "episodes_per_combination", "seed", "ratings", "files")
               if k not in manifest]
    if missing:
        raise ValueError(f"lacks {', '.join(missing)}")
    policies = _names(manifest["policies"], "policies")
    games = _names(manifest["games"], "games")
    _whole(manifest["episodes_per_combination"], "episodes_per_combination", 1, MAX_EPISODES)
    _whole(manifest["seed"], "seed", 0, 2 ** 63 - 1)
    ratings, files = manifest["ratings"], manifest["files"]
    if not isinstance(ratings, dict) or sorted(ratings) != sorted(policies) or len(policies) < 2:
        raise ValueError("ratings must map each of the (at least two) policies to its Elo")
    for policy, elo in ratings.items():
        if isinstance(elo, bool) or not isinstance(elo, (int, float)) or not math.isfinite(elo):
            raise ValueError(f"the rating of {safe_repr(policy, 60)} is {safe_repr(elo, 40)}, not a finite number")
    if not isinstance(files, dict) or not files or not all(
            isinstance(name, str) and _LOG_NAME.fullmatch(name) and isinstance(digest, str)
            and _DIGEST.fullmatch(digest) for name, digest in files.items()):
        raise ValueError("files must map logs/NAME.jsonl to its SHA-256 (64 hex digits)")
    _check_games_and_policies(games, policies, manifest.get("configs", {}))


def _check_games_and_policies(games: list, policies: list, configs) -> None:
    import socialgym_env
    from socialgym_agents.registry import check_spec
    if not isinstance(configs, dict) or not all(isinstance(c, dict) for c in configs.values()):
        raise ValueError("configs must map a game to its config object")
    for game in games:
        socialgym_env.make(game, **configs.get(game, {}))      # an unknown game or a bad config: ValueError
    if set(configs) - set(games):
        raise ValueError(f"configs names {', '.join(sorted(set(configs) - set(games)))}, not among its games")
    for policy in policies:
        check_spec(policy, games)


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


PROG = "python -m socialgym_benchmarks.tournament.reference"


def _checked_args(argv: Optional[Sequence[str]]):
    """The parsed options, each checked before anything is played or written (exit 2, one line)."""
    parser = OneLineArgumentParser(prog=PROG, description="Build the reference pool (logs and manifest), or "
                                                          "check a rating against it with a full round robin.")
    parser.add_argument("action", choices=["build", "check"])
    parser.add_argument("spec", nargs="?", help="check: the policy to rate")
    parser.add_argument("--out", type=Path, default=None, help="build: the pool folder; check: the rating's logs")
    parser.add_argument("--episodes", type=int, default=EPISODES, help="per pair of policies and game")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if not 1 <= args.episodes <= MAX_EPISODES:
        parser.error(f"--episodes must be from 1 to {MAX_EPISODES:,}, got {args.episodes}")
    if args.seed < 0:
        parser.error(f"--seed must be at least 0, got {args.seed}")
    if args.action == "check" and not args.spec:
        parser.error("check needs the SPEC of the policy to rate")
    if args.action == "build" and args.spec:
        parser.error(f"build takes no SPEC (got {one_line(args.spec, 80)!r})")
    args.out = args.out or (Path("runs") / "rate" if args.action == "check" else POOL_DIR)
    check_output_folder(args.out, "--out")
    return args


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = _checked_args(argv)
    if args.action == "check":
        pool = load_pool()
        rated = rate_against(args.spec, pool, args.episodes, args.seed, args.out, progress=False)
        print(f"{args.spec}: anchored Elo {rated['elo']:.0f} [{rated['lo']:.0f}, {rated['hi']:.0f}] from "
              f"{rated['episodes']} episodes against the references; full round robin (the pool's "
              f"episodes and these, fitted jointly): {full_round_robin_elo(pool, args.out / 'logs', args.spec):.0f}")
        return
    pool = build_pool(args.out, args.episodes, args.seed)
    for policy, rating in sorted(pool.ratings.items(), key=lambda kv: -kv[1]):
        print(f"{policy:<24} {rating:7.1f}")
    print(f"reference pool: {args.out} ({len(pool.manifest['files'])} logs)")


if __name__ == "__main__":
    main_of(main, PROG)
