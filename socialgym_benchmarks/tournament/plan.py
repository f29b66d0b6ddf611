"""Elo tournaments: rosters with balanced seats and sides, a resumable runner (local processes
or Ray), then the leaderboard.

Rosters (paper §3.3)
--------------------
For each game the *units* a policy can hold are the teams of a two-team (or n-team) game,
otherwise the individual seats. A *combination* is a set of ``m = min(#policies, #units)``
distinct policies (all ``C(k, m)`` sets are played). Each combination plays ``episodes``
episodes, rounded up to a multiple of ``m``; episode ``e`` gives unit ``u`` the policy
``combo[(u + e) % m]``. Over every ``m`` consecutive episodes each policy therefore holds each
unit (each side of an asymmetric game, each seat of a free-for-all game) equally often.

Roles are dealt by the env's seeded shuffle, so the roster reads the deal instead of fighting
it: for each episode seed we ``reset`` the env, read which seat got which ``(role, team)``
card, and seat the policies so that the canonical (unshuffled) role deck gets the planned
policies. The seat order therefore varies with the seed while sides stay exactly balanced.
Seeds are a hash of (tournament seed, game, combination, episode index) and are stored in
``EpisodeJob.seed``; ``EpisodeJob.tags`` records the matchup, rotation and sides.

Running
-------
One shard per game, one log file per shard (``OUT/logs/<game>.jsonl``), played by local processes
or Ray actors (:mod:`socialgym_benchmarks.tournament.backends`); every start plays only the episodes not yet
logged, so a killed run resumes with no episode lost or duplicated, and (locally) the episodes it
had in play go on from their journaled turns (``OUT/logs/<game>.journal``).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import shutil
import sys
import time
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

import socialgym_env
from socialgym_agents.registry import policy_kind
from socialgym_agents.runner import EpisodeJob
from socialgym_agents.specs import AgentSpec, PolicySpecError, parse_specs
from socialgym_benchmarks.ratings import check_ties
from socialgym_env.errors import LogFormatError

from .backends import failed_ids, in_flight_turns, logged_ids, run_local, run_ray

DEFAULT_AGENTS = ("smollm2", "scripted:heuristic", "scripted:random")
DEFAULT_EPISODES = 10
QUICK_EPISODES = 2

# --quick: config keys shrunk in every game that has them (value = the most allowed).
QUICK_LIMITS = {
    "rounds": 2, "num_rounds": 2, "max_rounds": 3, "subgames": 2, "days": 2, "max_days": 2,
    "discussion_rounds": 1, "debate_rounds": 1, "talk_rounds": 1, "speech_rounds": 1,
    "clue_rounds": 1, "question_rounds": 2, "max_questions": 4, "missions": 3,
    "max_talk_chars": 200,
}
QUICK_KEY_WORDS = ("round",)   # any other int key naming rounds is capped at 2
# --quick also caps every episode at this many decisions (the engine's turn cap: reaching it is a
# truncation scored by the game's cap rule). A small LLM on 2 CPU cores makes ~1-2 decisions/s.
QUICK_MAX_STEPS = 12


# The demo preset (``make demo``): per-game configs that keep every episode short while each
# game still ends by its own rules (no decision budget, no truncation; a test plays them all).
# Model combinations are what cost time (~0.7 s per SmolLM2 decision in the demo on 2 cores); combinations
# of scripted policies only are nearly free and carry the anchor (heuristic vs random).
DEMO_EPISODES = 2
DEMO_SCRIPTED_EPISODES = 8
DEMO_CONFIGS = {
    "prisoners_dilemma": {"rounds": 3}, "chicken": {"rounds": 3}, "battle_of_the_sexes": {"rounds": 2},
    "stag_hunt": {"rounds": 2}, "minority_game": {"rounds": 2}, "rock_paper_scissors": {"rounds": 3},
    "public_goods": {"rounds": 2}, "centipede": {"subgames": 2}, "bargaining": {"rounds": 2},
    "liars_dice": {"dice": 2}, "sheriff_of_nottingham": {"rounds": 1}, "dead_last": {"max_point_rounds": 1},
    # chess from a king-and-pawn ending: it ends (mate or a draw by the rules) within a few plies
    "chess": {"fen": "8/8/8/8/8/2k5/1p6/1K6 w - - 0 1"}, "insider": {"questions": 5},
    "spyfall": {"rounds": 1}, "undercover": {"rounds": 1},
    # one debate turn a day, no explanation round (a day cap would end it as a truncation)
    "triadic_werewolf": {"max_debate_turns": 1, "max_explanation_turns": 0},
}
# Registered games the demo preset leaves out unless named with --games: each would add a minute
# or more of SmolLM2 decisions to a main job held to 5 minutes on 2 cores (docs/benchmarks.md#episode-cost:
# 45-90 decisions a scripted episode, most of them the model's when it holds a side).
DEMO_LEFT_OUT = ("avalon", "codenames", "hanabi")
PRESETS = ("quick", "demo")


# ----------------------------------------------------------------------------- games
def available_games(games: Optional[Iterable[str]] = None) -> list[str]:
    """The given game ids, or every registered one. An unknown id raises UnknownGameError and a
    game module that fails to import raises its own error: a broken game is never skipped."""
    wanted = list(games) if games else socialgym_env.game_ids()
    for game in wanted:
        socialgym_env.game_class(game)
    return wanted


def preset_games(games: Optional[Iterable[str]], preset: Optional[str]) -> list[str]:
    """available_games, less DEMO_LEFT_OUT under the demo preset when no games were named."""
    if preset == "demo" and not games:
        return [g for g in available_games() if g not in DEMO_LEFT_OUT]
    return available_games(games)


def parse_value(text: str):
    """A config override value: JSON when it parses (2, 0.5, true, "x", [1]), else the string."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text


def parse_overrides(items: Iterable[str]) -> dict:
    """``["werewolves.max_steps=300", "*.rounds=2"]`` -> ``{"werewolves": {...}, "*": {...}}``."""
    out: dict = defaultdict(dict)
    for item in items or ():
        key, sep, value = item.partition("=")
        game, dot, name = key.partition(".")
        if not sep or not dot or not game or not name:
            raise ValueError(f"config override must look like game.key=value (or *.key=value), got {item!r}")
        out[game.strip()][name.strip()] = parse_value(value.strip())
    return dict(out)


def _game_items(items: Iterable[str], option: str, form: str) -> dict:
    """``["GAME=VALUE", ...]`` -> ``{GAME: VALUE}``, split at the first ``=`` (a spec's options hold
    more); an item without a game or a value, or a game named twice, is ValueError."""
    out = {}
    for item in items or ():
        game, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not game or not value:
            raise ValueError(f"{option} {item!r}: expected {form}")
        if game in out:
            raise ValueError(f"{option} names {game} more than once")
        out[game] = value
    return out


def parse_rosters(items: Iterable[str]) -> dict:
    """``--roster`` items ``GAME=SPEC,SPEC,...`` -> ``{GAME: [AgentSpec, ...]}`` (each list parsed as
    ``--agents`` is: PolicySpecError names the item)."""
    rosters = {}
    for game, text in _game_items(items, "--roster", "GAME=SPEC,SPEC,...").items():
        try:
            rosters[game] = parse_specs(text)
        except PolicySpecError as err:
            raise PolicySpecError(f"--roster {game}: {err}") from None
    return rosters


def parse_game_episodes(items: Iterable[str]) -> dict:
    """``--game-episodes`` items ``GAME=N`` -> ``{GAME: N}``, N a whole number from 1 to
    MAX_PLANNED_EPISODES."""
    counts = {}
    for game, text in _game_items(items, "--game-episodes", "GAME=N").items():
        count = int(text) if text.isascii() and text.isdigit() and len(text) <= 7 else 0
        if not 1 <= count <= MAX_PLANNED_EPISODES:
            raise ValueError(f"--game-episodes {game}={text}: N must be a whole number from 1 to "
                             f"{MAX_PLANNED_EPISODES:,}")
        counts[game] = count
    return counts


def quick_config(game: str) -> dict:
    """The --quick preset's config for one game: round-like counts capped (see QUICK_LIMITS)."""
    cls = socialgym_env.game_class(game)
    config = {}
    for key, default in cls.config_defaults.items():
        if not isinstance(default, int) or isinstance(default, bool):
            continue
        limit = QUICK_LIMITS.get(key)
        if limit is None and any(word in key for word in QUICK_KEY_WORDS):
            limit = 2
        if limit is not None and default > limit:
            config[key] = limit
    config["max_steps"] = min(QUICK_MAX_STEPS, cls.info.max_steps)
    # keep only what the game accepts (validate_config may forbid small values)
    try:
        socialgym_env.make(game, **config)
    except Exception:
        return {}
    return config


def demo_config(game: str) -> dict:
    """The demo preset's config for one game (empty for games that are short already)."""
    return dict(DEMO_CONFIGS.get(game, {}))


def game_configs(games: Sequence[str], overrides: Optional[dict] = None, quick: bool = False,
                 preset: Optional[str] = None) -> dict:
    """Per-game config: the preset (--quick or demo), then ``*.key`` overrides, then ``game.key``
    overrides."""
    overrides = overrides or {}
    unknown = set(overrides) - set(games) - {"*"}
    if unknown:
        raise ValueError(f"config overrides for games not in this tournament: {sorted(unknown)}")
    out = {}
    for game in games:
        if preset == "demo":
            config = demo_config(game)
        else:
            config = quick_config(game) if quick or preset == "quick" else {}
        cls = socialgym_env.game_class(game)
        from socialgym_env.env import ENGINE_CONFIG
        valid = set(cls.config_defaults) | set(ENGINE_CONFIG) | {"num_players"}
        config.update({k: v for k, v in overrides.get("*", {}).items() if k in valid})
        config.update(overrides.get(game, {}))
        out[game] = config
    return out


# ----------------------------------------------------------------------------- rosters
def episode_seed(seed: int, game: str, combo: Sequence[str], index: int) -> int:
    text = f"{seed}|{game}|{'+'.join(combo)}|{index}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def episode_id(seed: int, game: str, combo: Sequence[str], index: int) -> str:
    return f"{game}|{'~'.join(combo)}|e{index:03d}|s{episode_seed(seed, game, combo, index)}"


@dataclass
class GameLayout:
    """The canonical role deck of a game and the units (teams, else seats) policies hold."""

    game: str
    deck: list            # (role, team) per canonical slot
    units: list           # team names, or slot indices as strings
    unit_of_slot: list


def game_layout(env) -> GameLayout:
    deck = [tuple(card) for card in env.game.role_deck()]
    teams = list(OrderedDict.fromkeys(team for _, team in deck if team))
    if len(teams) >= 2 and all(team for _, team in deck):
        return GameLayout(env.game_info.id, deck, teams, [teams.index(t) for _, t in deck])
    return GameLayout(env.game_info.id, deck, [f"seat{i}" for i in range(len(deck))], list(range(len(deck))))


def seat_policies(env, layout: GameLayout, slot_policy: Sequence[str]) -> list[str]:
    """Map planned per-slot policies onto the seats of the deal ``env`` was reset with."""
    free = defaultdict(list)
    for slot, card in enumerate(layout.deck):
        free[card].append(slot)
    seats = []
    for seat in env.state.seats:
        slot = free[(seat.role, seat.team)].pop(0)
        seats.append(slot_policy[slot])
    return seats


def combinations(agents: Sequence[str], units: int) -> list[tuple]:
    m = min(len(agents), units)
    if len(agents) < 2 or m < 2:
        return [tuple(agents[:1])] if agents else []
    return list(itertools.combinations(agents, m))


def is_scripted(spec) -> bool:
    """A cheap policy that loads no model and is no person (the registry's trait, so a plugin kind
    counts as what it declares); False for a spec of no known kind."""
    try:
        return policy_kind(spec).scripted
    except PolicySpecError:
        return False


# Episodes per combination (--episodes, and a reference pool's manifest): far past any study (a
# plan is built whole before play), short of a number whose plan would exhaust memory before the
# first episode.
MAX_EPISODES = 100_000

# The most episodes one plan may hold: a plan is built whole before the first episode, so a
# typo such as --episodes 9999999999 must be refused, not fill memory in silence.
MAX_PLANNED_EPISODES = 200_000


def plan_game(game: str, agents: Sequence[str], episodes: int, seed: int = 0,
              config: Optional[dict] = None, tournament: str = "",
              scripted_episodes: Optional[int] = None, limit: int = MAX_PLANNED_EPISODES) -> list[EpisodeJob]:
    """The jobs of one game (see the module docstring for the balancing rule). A combination of
    scripted policies only plays ``scripted_episodes`` (default: ``episodes``): they cost almost
    nothing, and more of them tighten every rating without a single extra model call."""
    config = dict(config or {})
    env = socialgym_env.make(game, **config)
    layout = game_layout(env)
    jobs = []
    for c_index, combo in enumerate(combinations(agents, len(layout.units))):
        m = len(combo)
        wanted = scripted_episodes if scripted_episodes and all(map(is_scripted, combo)) else episodes
        count = math.ceil(max(wanted, 1) / m) * m
        if len(jobs) + count > limit:
            raise ValueError(f"the plan would hold more than {MAX_PLANNED_EPISODES:,} episodes ({game}: "
                             f"{count:,} per combination); give fewer --episodes or games")
        jobs += combo_jobs(env, layout, combo, range(count), config, seed, tournament, c_index)
    return jobs


def combo_jobs(env, layout: GameLayout, combo: Sequence[str], indices: Iterable[int], config: dict,
               seed: int = 0, tournament: str = "", combo_index: int = 0) -> list[EpisodeJob]:
    """The jobs of one combination's episodes ``indices`` on the game ``env`` (made with
    ``config``): the hook a planner that picks match-ups round by round
    (:mod:`socialgym_benchmarks.tournament.adaptive`) plans with, so its episodes are the round robin's."""
    game, m = layout.game, len(combo)
    jobs = []
    for e in indices:
        rot = e % m
        unit_policy = [combo[(u + rot) % m] for u in range(len(layout.units))]
        slot_policy = [unit_policy[u] for u in layout.unit_of_slot]
        s = episode_seed(seed, game, combo, e)
        env.reset(seed=s)
        seats = seat_policies(env, layout, slot_policy)
        tags = {"tournament": tournament or f"seed{seed}", "matchup": "~".join(combo),
                "combo_index": combo_index, "episode_index": e, "rotation": rot,
                "sides": {str(layout.units[u]): unit_policy[u] for u in range(len(layout.units))}}
        jobs.append(EpisodeJob(game=game, seed=s, seats=seats, config=config,
                               episode_id=episode_id(seed, game, combo, e), tags=tags))
    return jobs


def plan_tournament(games: Sequence[str], agents: Sequence[str], episodes: int = DEFAULT_EPISODES,
                    seed: int = 0, configs: Optional[dict] = None, tournament: str = "",
                    scripted_episodes: Optional[int] = None, rosters: Optional[dict] = None,
                    game_episodes: Optional[dict] = None) -> list[EpisodeJob]:
    """Every game's jobs (:func:`plan_game`). ``rosters`` ({game: specs}) plays a game by its own
    roster instead of ``agents``; ``game_episodes`` ({game: n}) gives a game its own episodes per
    combination, combinations of scripted policies only included."""
    configs, rosters, game_episodes = configs or {}, rosters or {}, game_episodes or {}
    jobs = []
    for game in games:
        count = game_episodes.get(game)
        jobs.extend(plan_game(game, rosters.get(game, agents), count or episodes, seed, configs.get(game), tournament,
                              count or scripted_episodes, limit=MAX_PLANNED_EPISODES - len(jobs)))
    ids = [j.episode_id for j in jobs]
    if len(ids) != len(set(ids)):
        raise RuntimeError("duplicate episode ids in the plan")
    return jobs


@dataclass
class TournamentResult:
    out_dir: Path
    log_dir: Path
    planned: int
    already_logged: int
    played: int
    games: list
    retried: int = 0                    # episodes logged as failed before and played again now
    failed: int = 0                     # episodes played now that ended as failed records
    summary: dict = field(default_factory=dict)


def run_tournament(jobs: Sequence[EpisodeJob], out_dir, backend: str = "local", workers: int = 1,
                   resume: bool = True, progress: bool = True, pool_seed: int = 0,
                   ray_address: Optional[str] = None, leaderboard: bool = True,
                   n_boot: int = 1000, retry_failed: bool = True, ties: str = "exclude") -> TournamentResult:
    """Play the planned jobs not yet logged under ``out_dir/logs`` (episodes logged only as
    failed are played again unless ``retry_failed=False``), then rebuild the leaderboard in
    ``out_dir`` (unless ``leaderboard=False``)."""
    out_dir = Path(out_dir)
    log_dir = out_dir / "logs"
    if not resume and log_dir.exists():
        backup = out_dir / f"logs.previous-{time.strftime('%Y%m%d-%H%M%S')}"
        shutil.move(str(log_dir), str(backup))
        print(f"--no-resume: moved the old logs to {backup}", file=sys.stderr)
    log_dir.mkdir(parents=True, exist_ok=True)
    done = logged_ids(log_dir, retry_failed=retry_failed)
    todo = [j for j in jobs if j.episode_id not in done]
    retried = len({j.episode_id for j in todo} & failed_ids(log_dir)) if retry_failed else 0
    shards: dict = OrderedDict()
    for job in todo:
        shards.setdefault(job.game, []).append(job)
    played = 0
    already = len(jobs) - len(todo)
    if shards:
        try:
            if backend == "local":
                played = run_local(shards, log_dir, workers=workers, pool_seed=pool_seed, progress=progress,
                                   already=already)
            elif backend == "ray":
                played = run_ray(shards, log_dir, workers=workers, pool_seed=pool_seed, progress=progress,
                                 address=ray_address, already=already)
            else:
                raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
        except KeyboardInterrupt:        # Ctrl-C, or SIGTERM under the CLI: say how to go on
            logged = len({j.episode_id for j in jobs} & logged_ids(log_dir, retry_failed=retry_failed))
            in_flight = in_flight_turns(log_dir)
            kept = (f"; {in_flight[0]} episodes in play keep their {in_flight[1]} journaled turns and go on from "
                    "them") if in_flight[0] else ""
            print(f"\ninterrupted: {logged} of {len(jobs)} episodes are logged in {log_dir}; run the same "
                  f"command again to resume (logged episodes are skipped, the rest are played{kept})", file=sys.stderr)
            raise
    # A failed episode is logged (with its error) and counted apart, never passed off as played.
    failed = len({j.episode_id for j in todo} & failed_ids(log_dir)) if played else 0
    result = TournamentResult(out_dir, log_dir, len(jobs), len(jobs) - len(todo), played,
                              sorted({j.game for j in jobs}), retried=retried, failed=failed)
    if leaderboard:
        from socialgym_benchmarks.leaderboard.render import build_leaderboard
        try:
            result.summary = build_leaderboard(log_dir, out_dir, n_boot=n_boot, ties=ties)
        except LogFormatError:
            if not failed:
                raise
            result.summary = {}          # every episode failed: nothing to rate (the caller reports it)
    return result


def tournament(games: Optional[Sequence[str]] = None, agents: Sequence[str] = DEFAULT_AGENTS,
               episodes: Optional[int] = None, seed: int = 0, out="runs/tournament",
               backend: str = "local", workers: Optional[int] = None, resume: bool = True,
               config_overrides: Sequence[str] = (), quick: bool = False, progress: bool = True,
               ray_address: Optional[str] = None, n_boot: int = 1000,
               retry_failed: bool = True, preset: Optional[str] = None,
               scripted_episodes: Optional[int] = None, ties: str = "exclude",
               rosters: Optional[dict] = None, game_episodes: Optional[dict] = None) -> TournamentResult:
    """The whole job, as the CLI runs it: plan, play (resumable), rebuild the leaderboard.

    ``quick`` (= ``preset="quick"``) plays 2 episodes per combination (rounded up so sides stay
    balanced) with round counts capped (QUICK_LIMITS) and a 12-decision cap; ``preset="demo"``
    plays DEMO_EPISODES per combination (DEMO_SCRIPTED_EPISODES when every policy in it is
    scripted) with DEMO_CONFIGS, every episode to its real end. Explicit ``episodes``,
    ``scripted_episodes`` and overrides still win. ``rosters`` ({game: specs}) plays a game by
    its own roster instead of ``agents``, ``game_episodes`` ({game: n}) with its own episodes per
    combination (scripted-only ones too); both name games of this tournament."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    quick = quick or preset == "quick"
    check_ties(ties)          # bad input fails before anything is played
    games = preset_games(games, preset)
    if not games:
        raise ValueError("no playable games selected")
    agents, rosters = _checked_rosters(agents, rosters or {}, games)
    game_episodes = dict(game_episodes or {})
    _check_game_keys(game_episodes, games, "--game-episodes")
    if episodes is None:
        episodes = DEMO_EPISODES if preset == "demo" else QUICK_EPISODES if quick else DEFAULT_EPISODES
    if scripted_episodes is None and preset == "demo":
        scripted_episodes = DEMO_SCRIPTED_EPISODES
    configs = game_configs(games, parse_overrides(config_overrides), quick=quick, preset=preset)
    jobs = plan_tournament(games, agents, episodes, seed, configs, scripted_episodes=scripted_episodes,
                           rosters=rosters, game_episodes=game_episodes)
    if workers is None:
        workers = default_workers(list(dict.fromkeys(p for job in jobs for p in job.seats)), games)
    return run_tournament(jobs, out, backend=backend, workers=workers, resume=resume, progress=progress,
                          pool_seed=seed, ray_address=ray_address, n_boot=n_boot, retry_failed=retry_failed,
                          ties=ties)


def _specs(agents: Iterable) -> list:
    """Specs parsed once (AgentSpecs pass through), in order, each once."""
    return list(dict.fromkeys(AgentSpec.of(a.strip() if isinstance(a, str) else a) for a in agents if str(a).strip()))


def _check_game_keys(per_game: dict, games: Sequence[str], option: str) -> None:
    """Every game ``per_game`` names is registered (UnknownGameError otherwise) and in ``games``."""
    for game in per_game:
        socialgym_env.game_class(game)
    outside = [game for game in per_game if game not in games]
    if outside:
        raise ValueError(f"{option} names {', '.join(outside)}, not among this tournament's games "
                         "(--games chooses them)")


def _checked_rosters(agents: Sequence, rosters: dict, games: Sequence[str]) -> tuple:
    """``agents`` and each game's roster as canonical spec strings, every spec checked for the games
    it plays (``--agents`` for the games without a roster of their own) before anything is played."""
    _check_game_keys(rosters, games, "--roster")
    specs = _specs(agents)
    _check_policies(specs, [game for game in games if game not in rosters])
    out = {}
    for game, roster in rosters.items():
        roster = _specs(parse_specs(roster) if isinstance(roster, str) else roster)
        _check_policies(roster, [game])
        out[game] = [str(spec) for spec in roster]
    return [str(spec) for spec in specs], out


def default_workers(agents: Sequence[str], games: Sequence[str]) -> int:
    """A model policy is compute-bound and batches across games in one process; scripted
    policies are cheap and spread over processes (one a game, up to the CPU count)."""
    return max(1, min(os.cpu_count() or 1, len(games))) if all(map(is_scripted, agents)) else 1


def _check_policies(agents: Sequence, games: Sequence[str]) -> None:
    """Fail before playing when a spec is bad (socialgym_agents.registry.check_spec: options, paths and
    URLs are checked, no model is loaded; the workers load them)."""
    from socialgym_agents.registry import check_spec
    for spec in agents:
        check_spec(spec, games)
