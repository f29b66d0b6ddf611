"""The machinery every SPaRTan protocol shares: the experiment file, playing games (through the
tournament's resumable runner), self-play, cached reflection, and evaluation cells.

Everything a protocol plays goes through :func:`socialgym_benchmarks.tournament.run_tournament` into
``RUN/games/logs/<game>.jsonl``: the same backends (batched local runner, process pool, Ray),
the same resume (an episode id already logged is never replayed) and the standard episode
schema, with each seat's playbook id in its roster. Episode ids are derived from what defines
the game (seed, seat policies, seat playbook ids, config), so a rerun after a kill plays only
what is missing, and two conditions that are the same game (the no-playbook baseline of the
alt and the main side in self-play) share their episodes. Playbooks are stored under
``RUN/playbooks``; one already written is reused rather than regenerated.

Seeds: evaluation game ``k`` of a game has the same seed in every condition, and every seat's
randomness (scripted draws, LLM sampling seeds) comes from (game, seed, seat) only
(:func:`socialgym_agents.base.seat_seed`), never from the episode id that names the arm. These are
common random numbers: the playbook is the only difference between a baseline, a playbook and
a placebo game, so a playbook-blind policy replays them identically, and arms are compared
paired by seed (:func:`socialgym_benchmarks.studies.spartan.stats.paired_delta`). Self-play games use a separate
seed stream per round.

Counting: :meth:`Experiment.evaluate` plays each distinct condition once, however many
playbooks of a protocol share it (the baseline of a target is one condition, not one per
source), and counts each (episode, side) once.
"""
from __future__ import annotations

import hashlib
import json
import tomllib
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Optional, Sequence

import socialgym_env
from socialgym_agents.runner import EpisodeJob
from socialgym_benchmarks.tournament import plan as tour
from socialgym_env.atomic import atomic_write_text
from socialgym_env.logs import iter_log_dir

from .parroting import parroting
from .playbook import Playbook, load_playbook, placebo_of, save_playbook
from .reflect import Reflector, make_reflector, reflect
from .sides import Sides, game_sides
from .stats import paired_delta, rate

PROTOCOLS = ("reflect", "evaluate", "within", "cross", "multigame", "distill")


# ----------------------------------------------------------------------------- the experiment file
@dataclass
class SpartanConfig:
    """One protocol run. Every key can be set in the TOML/YAML file or with ``--set key=value``."""

    protocol: str = "within"
    model: str = "smollm2"              # plays every seat of self-play, and the unarmed opponent
    reflector: str = ""                 # spec writing the playbooks (default: model); file:PATH = fixed text
    games: list = field(default_factory=lambda: ["prisoners_dilemma"])
    rounds: int = 4                     # within / reflect: R1..R<rounds>
    selfplay_games: int = 10            # N self-play games per reflection (per game)
    eval_games: int = 10                # K evaluation games per side and condition
    seed: int = 0
    placebo: bool = True                # the placebo control (same length, no game content)
    # within: the stop rule (protocols.StopRule). Off by default: the paper plays R1..R4.
    stop_rule: bool = False             # stop after stop_patience rounds in a row that improve no side
    stop_alpha: float = 0.05            # one-sided level of "improves on the best earlier round", split over sides
    stop_patience: int = 3              # rounds without improvement before stopping
    quick: bool = False                 # the tournament's --quick preset: round counts capped, 12-decision turn cap
    overrides: list = field(default_factory=list)   # game.key=value / *.key=value
    backend: str = "local"              # local | ray
    workers: int = 1                    # processes (local) or actors (ray); 1 = one batched runner
    ray_address: str = ""
    # cross: each source's R1 on each other target
    sources: list = field(default_factory=list)
    targets: list = field(default_factory=list)
    # multigame: named source sets (reflected from the combined R0 self-play) and their targets
    sets: dict = field(default_factory=dict)
    set_targets: dict = field(default_factory=dict)
    per_game_cap: int = 0               # multigame: at most this many episodes per source game (0 = all)
    # distill: the teacher is ``model``; each student plays the armed side against the teacher
    students: list = field(default_factory=list)
    playbook: str = ""                  # distill: a playbook file for every game (default: teacher's R1 per game)

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        if self.backend not in ("local", "ray"):
            raise ValueError(f"backend must be local or ray, got {self.backend!r}")
        for name in ("rounds", "selfplay_games", "eval_games", "workers", "stop_patience"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not 0 < float(self.stop_alpha) < 1:
            raise ValueError(f"stop_alpha must be between 0 and 1, got {self.stop_alpha}")
        for name in ("games", "sources", "targets", "students", "overrides"):
            value = getattr(self, name)
            if isinstance(value, str):
                setattr(self, name, [v.strip() for v in value.split(",") if v.strip()])

    @property
    def reflector_spec(self) -> str:
        return self.reflector or self.model

    def to_dict(self) -> dict:
        return asdict(self)


def _coerce(name: str, text: str):
    kind = {f.name: f.type for f in fields(SpartanConfig)}[name]
    if kind in ("bool", bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} takes true/false, got {text!r}")
    if kind in ("int", int):
        return int(text)
    if kind in ("float", float):
        return float(text)
    if kind in ("dict", dict):
        return json.loads(text)
    return text


def _read_experiment_file(path: Path) -> dict:
    """The experiment file's table; anything unreadable is a ValueError naming the file."""
    if path.suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise ValueError(f"experiment file must be .toml, .yaml, .yml or .json, got {path.name}")
    import yaml
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text) or {}
    except UnicodeDecodeError:
        raise ValueError(f"experiment file {path} is not UTF-8 text (a binary file?)") from None
    except (ValueError, yaml.YAMLError) as err:       # tomllib's and json's errors are ValueErrors
        raise ValueError(f"experiment file {path} is not valid {path.suffix[1:].upper()}: "
                         f"{' '.join(str(err).split())[:300]}") from None
    except RecursionError:           # thousands of nested brackets: no experiment table is that deep
        raise ValueError(f"experiment file {path} is nested too deeply to be an experiment table") from None
    if not isinstance(data, dict):
        raise ValueError(f"experiment file {path} must hold a table of keys (got {type(data).__name__})")
    return data


def load_config(path=None, settings: Sequence[str] = (), **values) -> SpartanConfig:
    """The experiment file (``.toml``, ``.yaml``/``.yml`` or ``.json``), then ``key=value``
    settings, then keyword values. Unknown keys raise ValueError naming the valid ones."""
    data: dict = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"experiment file {path} does not exist" + (" (it is a folder)" if path.is_dir() else ""))
        data = _read_experiment_file(path)
    valid = {f.name for f in fields(SpartanConfig)}
    for item in settings or ():
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in valid:
            raise ValueError(f"--set takes key=value with key one of: {', '.join(sorted(valid))} (got {item!r})")
        data[key.strip()] = _coerce(key.strip(), value.strip())
    wanted = values.get("protocol")
    if wanted and data.get("protocol", wanted) != wanted:
        raise ValueError(f"the experiment file is for protocol {data['protocol']!r}: run `socialgym spartan {data['protocol']}`")
    data.update({k: v for k, v in values.items() if v is not None})
    unknown = set(data) - valid
    if unknown:
        raise ValueError(f"unknown experiment keys {sorted(unknown)}; valid: {', '.join(sorted(valid))}")
    return SpartanConfig(**data)


# ----------------------------------------------------------------------------- ids and seeds
def stable_hash(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def seed_of(*parts) -> int:
    return int(stable_hash(*parts)[:8], 16) & 0x7FFFFFFF


def game_episode_id(kind: str, game: str, seed: int, seats: Sequence[str], playbook_ids: dict, config: dict) -> str:
    """Derived from everything that defines the game, so equal games share one id."""
    digest = stable_hash(game, seed, list(seats), sorted(playbook_ids.items()), config)[:12]
    return f"spartan|{kind}|{game}|s{seed}|{digest}"


@dataclass(frozen=True)
class Condition:
    """One evaluation condition: ``armed`` plays ``side`` (with ``playbook``, or none for the
    baseline), ``opponent`` every other seat; K games with the shared evaluation seeds."""

    game: str
    side: str
    armed: str
    opponent: str
    kind: str                            # baseline | playbook | placebo
    playbook: Optional[Playbook] = None

    @property
    def playbook_id(self) -> Optional[str]:
        return self.playbook.id if self.playbook else None


# ----------------------------------------------------------------------------- the experiment
class Experiment:
    def __init__(self, config: SpartanConfig, out, reflector: Optional[Reflector] = None, progress: bool = False):
        self.config = config
        self.out = Path(out)
        self._check_specs(reflector_given=reflector is not None)
        self.failed = 0                      # episodes played by this process that ended as failed records
        self.log_root = self.out / "games"
        self.playbook_dir = self.out / "playbooks"
        self.progress = progress
        self._reflector = make_reflector(reflector) if reflector is not None else None
        games = self.all_games()
        tour.available_games(games)
        self.configs = tour.game_configs(games, tour.parse_overrides(config.overrides), quick=config.quick)
        self._records: dict = {}
        self.out.mkdir(parents=True, exist_ok=True)     # only once games, configs and specs proved good
        self._write_config()

    # -- setup
    def _check_specs(self, reflector_given: bool) -> None:
        """Every policy and reflector spec, before anything is played or written (a bad option,
        path or URL is one PolicySpecError, not a run of failed games)."""
        from socialgym_agents.registry import check_spec
        c = self.config
        games = self.all_games()
        for spec in dict.fromkeys([c.model, *c.students]):
            check_spec(spec, games)
        if reflector_given:
            return
        if c.reflector_spec.startswith("file:"):
            if not Path(c.reflector_spec[len("file:"):]).is_file():
                raise ValueError(f"reflector {c.reflector_spec!r}: no such file")
        else:
            check_spec(c.reflector_spec)

    def all_games(self) -> list[str]:
        c = self.config
        names = list(c.games) + list(c.sources) + list(c.targets)
        for members in c.sets.values():
            names += list(members)
        for targets in c.set_targets.values():
            names += list(targets)
        return list(dict.fromkeys(names))

    def _write_config(self) -> None:
        """experiment.json records the resolved config; resuming with a different one is refused
        (its games would be mixed with the old ones)."""
        path = self.out / "experiment.json"
        # Logs played before seats were seeded by (game, seed, seat) lack common random numbers:
        # a folder without this marker is refused rather than mixed with new games.
        current = {**self.config.to_dict(), "seat_seeds": "socialgym_agents.base.seat_seed(game, seed, seat)"}
        if path.exists():
            old = json.loads(path.read_text(encoding="utf-8"))
            keep = ("backend", "workers", "ray_address", "stop_rule", "stop_alpha", "stop_patience")   # how it runs, not what it plays
            if {k: v for k, v in old.items() if k not in keep} != {k: v for k, v in current.items() if k not in keep}:
                changed = sorted(k for k in current if k not in keep and old.get(k) != current[k])
                raise ValueError(f"{self.out} holds a run of another experiment (differs in {changed}); use a new --out")
        atomic_write_text(path, json.dumps(current, indent=2, sort_keys=True))

    @property
    def reflector(self) -> Reflector:
        if self._reflector is None:
            self._reflector = make_reflector(self.config.reflector_spec, seed=self.config.seed)
        return self._reflector

    def sides(self, game: str) -> Sides:
        return game_sides(game)

    # -- playing
    def play(self, jobs: Sequence[EpisodeJob]) -> None:
        """Play the jobs not yet logged (deduplicated by id), through the tournament runner."""
        unique = list({job.episode_id: job for job in jobs}.values())
        if not unique:
            return
        c = self.config
        result = tour.run_tournament(unique, self.log_root, backend=c.backend, workers=c.workers, resume=True,
                                     progress=self.progress, pool_seed=c.seed, ray_address=c.ray_address or None,
                                     leaderboard=False)
        self.failed += result.failed
        self._records = {}

    def records(self, ids: Sequence[str]) -> list[dict]:
        if not self._records:
            log_dir = self.log_root / "logs"
            self._records = {r["episode_id"]: r for r in iter_log_dir(log_dir)} if log_dir.exists() else {}
        missing = [i for i in ids if i not in self._records]
        if missing:
            raise RuntimeError(f"{len(missing)} planned episodes are not in the logs (first: {missing[0]})")
        return [self._records[i] for i in ids]

    # -- self-play and reflection
    def selfplay_jobs(self, game: str, spec: str, playbook: Optional[Playbook], n: int) -> list[EpisodeJob]:
        """N self-play games of ``spec`` on every seat, every seat armed with ``playbook``."""
        config = self.configs[game]
        env = socialgym_env.make(game, **config)
        jobs = []
        for i in range(n):
            seed = seed_of(self.config.seed, game, "selfplay", playbook.id if playbook else None, i)
            seats = [spec] * len(env.possible_agents)
            texts = {a: playbook.text for a in env.possible_agents} if playbook else {}
            ids = {a: playbook.id for a in env.possible_agents} if playbook else {}
            jobs.append(EpisodeJob(game, seed, seats, dict(config),
                                   game_episode_id("selfplay", game, seed, seats, ids, config),
                                   playbooks=texts, playbook_ids=ids,
                                   tags={"spartan": "selfplay", "playbook": playbook.id if playbook else None,
                                         "index": i}))
        return jobs

    def selfplay(self, games: Sequence[str], spec: str, playbook: Optional[Playbook], n: int) -> dict:
        """Play (or find in the logs) the self-play games; {game: [records]}."""
        jobs = {g: self.selfplay_jobs(g, spec, playbook, n) for g in games}
        self.play([j for js in jobs.values() for j in js])
        return {g: self.records([j.episode_id for j in js]) for g, js in jobs.items()}

    def playbook(self, name: str, records: Sequence[dict], prior: Optional[Playbook] = None,
                 meta: Optional[dict] = None) -> Playbook:
        """The stored playbook NAME, else reflect it from ``records`` and store it."""
        stored = load_playbook(self.playbook_dir, name)
        if stored is not None:
            return stored
        playbook = reflect(records, self.reflector, name, prior, meta)
        save_playbook(self.playbook_dir, playbook)
        return playbook

    def reflect_rounds(self, games: Sequence[str], name: str, rounds: int, spec: Optional[str] = None,
                       after_round=None) -> list[Playbook]:
        """R1..R<rounds> of ``name`` over ``games``: round t plays N self-play games armed with
        R(t-1) and writes R(t) (a revision of R(t-1)). ``after_round(t, playbook)`` may return
        True to stop (the stop rule)."""
        spec = spec or self.config.model
        chain: list[Playbook] = []
        prior = None
        for t in range(1, rounds + 1):
            logs = self.selfplay(games, spec, prior, self.config.selfplay_games)
            records = [r for g in games for r in logs[g]]
            playbook = self.playbook(f"{name}-R{t}", records, prior,
                                     {"round": t, "source_model": spec, "protocol": self.config.protocol})
            chain.append(playbook)
            prior = playbook
            if after_round is not None and after_round(t, playbook):
                break
        return chain

    # -- evaluation
    def conditions(self, game: str, armed: str, opponent: str, playbook: Optional[Playbook],
                   sides: Optional[Sequence[str]] = None) -> list[Condition]:
        """Baseline, playbook (and placebo when on) on every side of ``game``."""
        names = sides or self.sides(game).names
        out = [Condition(game, s, armed, opponent, "baseline") for s in names]
        if playbook is not None:
            out += [Condition(game, s, armed, opponent, "playbook", playbook) for s in names]
            if self.config.placebo:
                placebo = placebo_of(playbook)
                out += [Condition(game, s, armed, opponent, "placebo", placebo) for s in names]
        return out

    def condition_jobs(self, cond: Condition) -> list[EpisodeJob]:
        config = self.configs[cond.game]
        env = socialgym_env.make(cond.game, **config)
        sides = self.sides(cond.game)
        jobs = []
        for k in range(self.config.eval_games):
            seed = seed_of(self.config.seed, cond.game, "eval", k)
            env.reset(seed=seed)
            armed = set(sides.seats(env, cond.side))
            seats = [cond.armed if a in armed else cond.opponent for a in env.possible_agents]
            texts = {a: cond.playbook.text for a in armed} if cond.playbook else {}
            ids = {a: cond.playbook.id for a in armed} if cond.playbook else {}
            jobs.append(EpisodeJob(cond.game, seed, seats, dict(config),
                                   game_episode_id("eval", cond.game, seed, seats, ids, config),
                                   playbooks=texts, playbook_ids=ids,
                                   tags={"spartan": "eval", "eval_index": k}))
        return jobs

    def evaluate(self, conditions: Sequence[Condition]) -> list[dict]:
        """Play every distinct condition's games (one batch), then one row per condition
        (symmetric games: seat sides pooled) with its Wilson interval and, against the baseline
        of the same game, armed model and opponent, the paired difference: exact McNemar (or
        its sign-flip generalisation for pooled seats) and a paired bootstrap interval over the
        shared seeds. A condition listed twice (the baseline of a target every source's
        playbook is aimed at) is played and counted once."""
        distinct = list({_condition_key(cond): cond for cond in conditions}.values())
        jobs = [(cond, self.condition_jobs(cond)) for cond in distinct]
        self.play([j for _, js in jobs for j in js])
        cells = defaultdict(lambda: {"outcomes": {}, "failed": 0, "records": {}})
        for cond, js in jobs:
            sides = self.sides(cond.game)
            self._count(cells[_row_key(cond, sides)], cond, sides, js)
        return [_evaluation_row(key, entry, cells, self.config.seed) for key, entry in cells.items()]

    def _count(self, entry: dict, cond: Condition, sides: Sides, jobs: list) -> None:
        """Add a condition's played games to its cell: the records, the failed count, and one
        outcome per (evaluation seed, side), the pairing unit with the baseline."""
        for job, record in zip(jobs, self.records([j.episode_id for j in jobs])):
            entry["records"][record["episode_id"]] = record
            if record.get("failed") or record.get("rewards") is None:
                entry["failed"] += 1
                continue
            entry["outcomes"][(job.tags["eval_index"], cond.side)] = int(sides.won(record, cond.side))


# the paired difference's columns of an evaluation row: column -> PairedDelta attribute
DELTA_COLUMNS = {"delta_points": "points", "delta_ci_low": "lo", "delta_ci_high": "hi", "delta_ci_method": "interval",
                 "p_value": "p_value", "test": "test", "pairs": "pairs", "significant": "significant"}


def _evaluation_row(key: tuple, entry: dict, cells: dict, seed: int) -> dict:
    """One condition's row: its win rate, and against the baseline of the same game, side,
    armed model and opponent (when there is one) the paired difference; empty columns None."""
    game, side, armed, opponent, kind, playbook_id = key
    outcomes = entry["outcomes"]
    r = rate(sum(outcomes.values()), len(outcomes))
    base = cells.get((game, side, armed, opponent, "baseline", None))
    b = rate(sum(base["outcomes"].values()), len(base["outcomes"])) if base else None
    d = paired_delta(paired_by_seed(outcomes, base["outcomes"]), seed=seed) \
        if base is not None and kind != "baseline" else None
    talk = parroting(list(entry["records"].values()))
    return {"game": game, "side": side, "armed_model": armed, "opponent_model": opponent,
            "condition": kind, "playbook_id": playbook_id, "wins": r.wins, "n": r.n,
            "win_rate": r.p, "ci_low": r.lo, "ci_high": r.hi, "ci_method": "Wilson 95%",
            "failed": entry["failed"], "baseline_win_rate": b.p if b else None,
            **{column: getattr(d, attribute) if d else None for column, attribute in DELTA_COLUMNS.items()},
            "outcomes": {f"{k}|{s}": v for (k, s), v in sorted(outcomes.items(), key=str)},
            "consecutive_jaccard": talk["consecutive_jaccard"], "copy_share": talk["copy_share"],
            "utterances": talk["utterances"]}


def arm_of(record: dict) -> str:
    """baseline, playbook or placebo: the arm an evaluation record was played in (from the
    playbook ids of its roster)."""
    ids = {seat["playbook_id"] for seat in record.get("roster", []) if seat.get("playbook_id")}
    if not ids:
        return "baseline"
    return "placebo" if next(iter(ids)).startswith("placebo-") else "playbook"


def _condition_key(cond: Condition) -> tuple:
    return (cond.game, cond.side, cond.armed, cond.opponent, cond.kind, cond.playbook_id)


def _row_key(cond: Condition, sides: Sides) -> tuple:
    side = "pooled" if sides.symmetric else cond.side
    return (cond.game, side, cond.armed, cond.opponent, cond.kind, cond.playbook_id)


def paired_by_seed(treated: dict, baseline: dict) -> dict:
    """{seed: (treated wins, baseline wins, observations)} over the (seed, side) observations
    both arms completed; pooled seats of one seed stay together (one bootstrap unit)."""
    per_seed: dict = {}
    for (seed, side), won in treated.items():
        if (seed, side) not in baseline:
            continue
        t, b, m = per_seed.get(seed, (0, 0, 0))
        per_seed[seed] = (t + won, b + baseline[(seed, side)], m + 1)
    return per_seed
