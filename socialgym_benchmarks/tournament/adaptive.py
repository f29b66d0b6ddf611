"""Adaptive tournaments: play in rounds, spend the next round's episodes where the ranking is
least certain, stop when every adjacent pair of the ranking is resolved or the budget is spent.

The rule
--------
A *look* follows every round: the pooled Bradley–Terry fit (:mod:`socialgym_benchmarks.ratings`)
orders the competitors, and each adjacent pair of that order is *resolved* when the profile-
likelihood interval of its Elo difference excludes 0 (:func:`socialgym_benchmarks.ratings.contrast_excludes`).
The run stops at the first look where every adjacent pair is resolved, or when the budget (in
episodes) is spent.

Validity under the data-dependent stop: the looks come at planned totals that grow
geometrically (the first round, then x``growth`` each round, up to the budget:
:func:`look_schedule`), so their number ``L`` is fixed before the first episode. Each
competitor's reported Elo interval uses level ``1 - (1 - level) / L``, and every pair
difference (the stop rule, and the reported pair intervals) ``1 - (1 - level) / (L P)`` with
``P = k (k - 1) / 2`` the pairs of ``k`` competitors (Bonferroni over the planned looks, and over
the pairs, because which pairs are adjacent is read off the data). An interval misses at the
stop only if it misses at some look, so by the union bound each reported Elo interval covers
with probability at least ``level`` whatever the stopping time, and all pair intervals cover
at once with at least ``level`` (so a wrong claimed order has probability at most ``1 - level``);
:mod:`socialgym_benchmarks.studies.adaptive_vs_round_robin` checks both by simulation. The likelihood
does not depend on how match-ups were chosen from past outcomes, but the intervals' coverage
rests on every pair's information growing, which the next round's shares see to (below).

Where the next round goes: a quarter of its blocks to the least-played pairs of all
(:func:`least_played`: it reads no outcome), the rest to the unresolved adjacent pairs, half of
those evenly and half in proportion to need: a pair ``(a, b)`` with fitted gap ``d`` and model
standard error ``se`` needs about ``(z / max(|d|, MIN_GAP))**2 - 1 / se**2`` more Fisher
information to be resolved, and one episode between them brings ``p (1 - p) (ln 10 / 400)**2``
of it (``p`` the fitted win probability). Blocks are whole side rotations. By need alone, a
pair that looks far apart by chance is starved and keeps its overestimate, and the intervals
lose coverage under the adaptive design even before any correction for the stop
(``python -m socialgym_benchmarks.studies.adaptive_vs_round_robin --planted null --explore-share 0
--even-share 0`` shows it); the outcome-blind and even shares keep every pair's information
growing.

The plan (``OUT/adaptive_plan.json``, written atomically before each round is played) holds
the settings and every round's match-ups with their episode indices; a resumed run plays the
planned episodes not yet logged, and plans new rounds only after those: it never replays or
double-counts an episode (episode ids are the round robin's: game, combination, index, seed).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from scipy.stats import norm

from socialgym_env.atomic import atomic_write_json

from socialgym_benchmarks import ratings as bt

from . import plan as tour

LEVEL = 0.95
GROWTH = 1.5            # each look's planned total over the previous one
FIRST_PER_PAIR = 2      # episodes of every pair in the first round (one side rotation of a two-seat game)
MIN_GAP = 25.0          # Elo: a fitted gap below this is taken as this when sizing a pair's need
EVEN_SHARE = 0.5        # of a round's adaptive blocks spread evenly over the open pairs (the rest by need)
EXPLORE_SHARE = 0.25    # of a round's blocks given to the least-played pairs of all, whatever the outcomes
PLAN_FILE = "adaptive_plan.json"
SUMMARY_FILE = "adaptive.json"


def look_schedule(first: int, budget: int, growth: float = GROWTH) -> list[int]:
    """Planned episode totals at the looks: ``first``, then x``growth`` (at least +1), ending at
    ``budget``; fixed by the settings alone, so the number of looks is known in advance."""
    if budget < first:
        raise ValueError(f"--budget {budget} is below the first round ({first} episodes: every pair of "
                         "policies in every side rotation)")
    totals = [first]
    while totals[-1] < budget:
        totals.append(min(budget, max(totals[-1] + 1, math.ceil(totals[-1] * growth))))
    return totals


def look_level(level: float, looks: int, comparisons: int = 1) -> float:
    """The per-look (and reported) level: Bonferroni over the planned looks and ``comparisons``
    (for pair differences: every pair of competitors, since which pairs are adjacent is itself
    read off the data)."""
    return 1.0 - (1.0 - level) / (max(1, looks) * max(1, comparisons))


@dataclass
class Levels:
    """The corrected levels of one run: ``pairs`` for every pair difference (the stop rule and
    the reported pair intervals), ``ratings`` for each competitor's Elo interval."""

    pairs: float
    ratings: float

    @classmethod
    def of(cls, level: float, looks: int, competitors: int) -> "Levels":
        return cls(look_level(level, looks, competitors * (competitors - 1) // 2), look_level(level, looks))


@dataclass
class PairState:
    """One adjacent pair of the fitted order: ``upper`` rated above ``lower``."""

    upper: str
    lower: str
    gap: float                  # Elo, upper - lower, >= 0
    resolved: bool
    need: float                 # episodes between the two that would about resolve it


@dataclass
class Assessment:
    players: list
    elo: dict                   # competitor -> Elo (pooled fit)
    order: list                 # competitors that played, best first
    pairs: list                 # PairState per adjacent pair of ``order``

    @property
    def resolved(self) -> bool:
        return bool(self.pairs) and all(p.resolved for p in self.pairs)


def _fisher(battles: bt.Battles, elo: np.ndarray) -> np.ndarray:
    """Fisher information of the Elo strengths (in Elo units) at the fit, battles as independent."""
    k = len(battles.players)
    wins = battles.win_matrix()
    n = wins + wins.T
    slope = bt.LN_BASE / bt.SCALE
    p = 1.0 / (1.0 + bt.BASE ** (-(elo[:, None] - elo[None, :]) / bt.SCALE))
    weight = n * p * (1 - p) * slope ** 2
    info = -weight
    info[np.arange(k), np.arange(k)] = weight.sum(1) - weight.diagonal()
    return info


def assess(battles: bt.Battles, level: float) -> Assessment:
    """The fitted order and, per adjacent pair, whether it is resolved at ``level`` and how many
    more of its episodes it would about need (see the module docstring)."""
    k = len(battles.players)
    elo = bt.fit_bt(battles.win_matrix()) if k else np.zeros(0)
    wins = battles.win_matrix()
    played = np.flatnonzero(wins.sum(0) + wins.sum(1) > 0)
    order = sorted(played.tolist(), key=lambda i: (-elo[i], battles.players[i]))
    inverse = np.linalg.pinv(_fisher(battles, elo))
    z = norm.ppf(0.5 + level / 2)
    slope = bt.LN_BASE / bt.SCALE
    pairs = []
    for a, b in zip(order, order[1:]):
        contrast = np.zeros(k)
        contrast[a], contrast[b] = 1.0, -1.0
        gap = float(elo[a] - elo[b])
        resolved = bt.contrast_excludes(battles, contrast, elo, 0.0, level)
        variance = float(contrast @ inverse @ contrast)
        p = 1.0 / (1.0 + bt.BASE ** (-gap / bt.SCALE))
        wanted = (z / max(gap, MIN_GAP)) ** 2 - (1.0 / variance if variance > 0 else 0.0)
        need = 0.0 if resolved else max(wanted, 0.0) / (p * (1 - p) * slope ** 2)
        pairs.append(PairState(battles.players[a], battles.players[b], gap, resolved, need))
    return Assessment(list(battles.players), {battles.players[i]: float(elo[i]) for i in range(k)},
                      [battles.players[i] for i in order], pairs)


def allocate(assessment: Assessment, blocks: int, even_share: float = EVEN_SHARE) -> list[tuple[str, str]]:
    """``blocks`` match-up blocks for the unresolved adjacent pairs: ``even_share`` of them
    spread evenly (so every open pair's information keeps growing: a pair whose gap looks
    large early is not starved on a chance lead, which would bias its estimate and let the
    intervals undercover), the rest in proportion to need; largest remainders, most needed
    first, deterministic."""
    open_pairs = [p for p in assessment.pairs if not p.resolved]
    if not open_pairs or blocks <= 0:
        return []
    need = np.array([max(p.need, 1.0) for p in open_pairs])
    ranked = np.argsort(-need, kind="stable")
    counts = np.zeros(len(open_pairs), dtype=int)
    even = max(min(blocks, len(open_pairs)), int(round(even_share * blocks)))
    counts[ranked] += even // len(open_pairs)
    counts[ranked[:even % len(open_pairs)]] += 1
    rest = blocks - even
    if rest:
        share = need / need.sum() * rest
        counts += np.floor(share).astype(int)
        left = rest - int(np.floor(share).sum())
        remainder = share - np.floor(share)
        counts[np.argsort(-remainder, kind="stable")[:left]] += 1
    out = []
    for i in ranked:
        out += [(open_pairs[i].upper, open_pairs[i].lower)] * int(counts[i])
    return out


def least_played(players: Sequence[str], played: dict, blocks: int) -> list[tuple[str, str]]:
    """``blocks`` pairs of ``players``, each time the pair with the fewest episodes so far
    (``played``: (a, b) -> episodes, a before b in ``players``; ties in roster order). It reads
    no outcome, so this share of a round keeps every pair's information growing whatever the
    fitted order says."""
    counts = {(a, b): played.get((a, b), 0) for i, a in enumerate(players) for b in players[i + 1:]}
    order = list(counts)
    out = []
    for _ in range(max(blocks, 0)):
        pair = min(order, key=lambda p: (counts[p], order.index(p)))
        counts[pair] += 1
        out.append(pair)
    return out


def plan_round(assessment: Assessment, played: dict, blocks: int, explore_share: float = EXPLORE_SHARE,
               even_share: float = EVEN_SHARE) -> list[tuple[str, str]]:
    """A round's pairs: ``explore_share`` of the blocks to the least-played pairs
    (:func:`least_played`), the rest to the open adjacent pairs (:func:`allocate`)."""
    if not any(not p.resolved for p in assessment.pairs):
        return []
    explore = int(round(explore_share * blocks))
    return (least_played(assessment.players, played, explore)
            + allocate(assessment, blocks - explore, even_share))


def intervals_at_stop(battles: bt.Battles, assessment: Assessment, levels: Levels) -> dict:
    """The reported profile-likelihood intervals: each adjacent pair's Elo difference at
    ``levels.pairs``, each competitor's Elo at ``levels.ratings``."""
    index = {p: i for i, p in enumerate(battles.players)}
    elo = np.array([assessment.elo[p] for p in battles.players])
    pairs = []
    for pair in assessment.pairs:
        contrast = np.zeros(len(battles.players))
        contrast[index[pair.upper]], contrast[index[pair.lower]] = 1.0, -1.0
        lo, hi = bt.contrast_interval(battles, contrast, elo, levels.pairs)
        pairs.append({"upper": pair.upper, "lower": pair.lower, "gap": pair.gap, "lo": bt.finite_or_none(lo),
                      "hi": bt.finite_or_none(hi), "resolved": pair.resolved})
    lo, hi = bt.profile_elo_intervals(battles, elo, levels.ratings) if battles.n else (elo, elo)
    ratings = {p: {"elo": float(elo[i]), "lo": bt.finite_or_none(lo[i]), "hi": bt.finite_or_none(hi[i])}
               for i, p in enumerate(battles.players)}
    return {"pair_level": levels.pairs, "rating_level": levels.ratings, "pairs": pairs, "ratings": ratings}


# ----------------------------------------------------------------------------- tournaments
@dataclass
class AdaptiveResult:
    out_dir: Path
    planned: int
    played: int
    stop: str                   # "resolved" | "budget"
    summary: dict


def _matchup(pair: tuple, order: Sequence[str], agents: Sequence[str], units: int) -> tuple:
    """The combination for a pair on a game with ``units`` units: the pair and, for games of
    more units, the competitors nearest to the pair in the fitted order; in the roster's order
    (as the round robin names its combinations)."""
    m = min(len(agents), units)
    chosen = list(pair)
    rank = {p: i for i, p in enumerate(order)}
    centre = (rank.get(pair[0], 0) + rank.get(pair[1], 0)) / 2
    others = sorted((p for p in agents if p not in chosen),
                    key=lambda p: (abs(rank.get(p, len(order)) - centre), agents.index(p)))
    chosen += others[:m - 2]
    return tuple(p for p in agents if p in chosen)


class AdaptivePlan:
    """The persisted plan: settings, rounds of (game, combination, episode indices), next
    index per (game, combination), the game cursor, the looks so far."""

    def __init__(self, path: Path, settings: dict):
        self.path = path
        self.data = {"settings": settings, "rounds": [], "next_index": {}, "game_cursor": 0, "looks": []}

    @classmethod
    def load_or_new(cls, path: Path, settings: dict) -> "AdaptivePlan":
        plan = cls(path, settings)
        if path.exists():
            try:
                data = json.loads(path.read_text())
                stored = data["settings"]
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path} is not an adaptive plan ({err.__class__.__name__}); move it aside "
                                 "or give another --out") from None
            if stored != settings:
                changed = sorted(k for k in set(stored) | set(settings) if stored.get(k) != settings.get(k))
                raise ValueError(f"{path.parent} holds an adaptive run with other settings ({', '.join(changed)}); "
                                 "give the same options to resume it, or another --out")
            plan.data = data
        return plan

    def save(self) -> None:
        atomic_write_json(self.path, self.data, indent=1)

    @property
    def planned(self) -> int:
        return sum(len(indices) for r in self.data["rounds"] for _, _, indices in r["matchups"])

    def episode_ids(self) -> set:
        """The ids of every planned episode (as :func:`socialgym_benchmarks.tournament.plan.combo_jobs` names them)."""
        seed = self.data["settings"]["seed"]
        return {tour.episode_id(seed, game, combo, e) for r in self.data["rounds"] for game, combo, indices in r["matchups"]
                for e in indices}

    def add_round(self, blocks: list, sizes: dict) -> None:
        """``blocks``: (game, combination) per block; ``sizes``: episodes of a block per game."""
        matchups: dict = {}
        for game, combo in blocks:
            key = f"{game}|{'~'.join(combo)}"
            start = self.data["next_index"].get(key, 0)
            self.data["next_index"][key] = start + sizes[game]
            matchups.setdefault((game, tuple(combo)), []).extend(range(start, start + sizes[game]))
        self.data["rounds"].append({"matchups": [[g, list(c), ix] for (g, c), ix in matchups.items()]})


@dataclass
class _Field:
    """What every round is played on: the games, the policies (specs as text), and per game
    its config, an env and its seat layout; ``sizes``: episodes of one block per game (a whole
    rotation of its units)."""

    games: list
    agents: list
    configs: dict
    envs: dict
    layouts: dict
    seed: int

    @property
    def sizes(self) -> dict:
        return {g: min(len(self.agents), len(self.layouts[g].units)) for g in self.games}

    def jobs(self, round_: dict) -> list:
        jobs = []
        for game, combo, indices in round_["matchups"]:
            jobs += tour.combo_jobs(self.envs[game], self.layouts[game], tuple(combo), indices, self.configs[game],
                                    self.seed)
        return jobs


def _field(games, agents, seed: int, config_overrides, quick: bool, preset: Optional[str]) -> _Field:
    """The games and policies checked (at least two distinct policies), each game's env made."""
    import socialgym_env
    from socialgym_agents.specs import AgentSpec

    games = tour.preset_games(games, preset)
    specs = list(dict.fromkeys(AgentSpec.of(a.strip() if isinstance(a, str) else a) for a in agents if str(a).strip()))
    tour._check_policies(specs, games)
    agents = [str(s) for s in specs]
    if len(agents) < 2:
        raise ValueError("an adaptive tournament needs at least two policies")
    configs = tour.game_configs(games, tour.parse_overrides(config_overrides), quick=quick, preset=preset)
    envs, layouts = {}, {}
    for game in games:
        envs[game] = socialgym_env.make(game, **configs[game])
        layouts[game] = tour.game_layout(envs[game])
    return _Field(games, agents, configs, envs, layouts, seed)


def adaptive_tournament(games: Optional[Sequence[str]], agents: Sequence[str], budget: int, seed: int = 0,
                        out="runs/tournament", level: float = LEVEL, growth: float = GROWTH,
                        first_per_pair: int = FIRST_PER_PAIR, workers: Optional[int] = None,
                        config_overrides: Sequence[str] = (), quick: bool = False, preset: Optional[str] = None,
                        progress: bool = True, resume: bool = True, ties: str = "exclude",
                        retry_failed: bool = True, leaderboard: bool = True) -> AdaptiveResult:
    """``socialgym tournament --until-resolved``: rounds of match-ups chosen by :func:`allocate`,
    each played (resumably) by the round robin's runner, until resolved or ``budget`` episodes."""
    bt.check_ties(ties)
    field = _field(games, agents, seed, config_overrides, quick, preset)
    n_pairs = len(field.agents) * (len(field.agents) - 1) // 2
    schedule = look_schedule(max(n_pairs * first_per_pair, 1), budget, growth)
    levels = Levels.of(level, len(schedule), len(field.agents))
    out = Path(out)
    settings = {"games": list(field.games), "agents": field.agents, "budget": budget, "seed": seed, "level": level,
                "growth": growth, "first_per_pair": first_per_pair, "configs": field.configs, "ties": ties}
    plan_path = out / PLAN_FILE
    if not resume and plan_path.exists():
        plan_path.replace(out / f"{PLAN_FILE}.previous-{time.strftime('%Y%m%d-%H%M%S')}")
    plan = AdaptivePlan.load_or_new(plan_path, settings)
    run = {"workers": workers or tour.default_workers(field.agents, field.games), "resume": resume,
           "progress": progress, "retry_failed": retry_failed, "ties": ties}
    played, stop = 0, None
    while stop is None:
        played += _play_rounds(plan, field, out, run, levels)
        stop = _stop(plan, budget, schedule) or _plan_next_round(plan, field, out, budget, schedule, levels,
                                                                 first_per_pair, ties)
    summary = _summary(plan, field, out, stop, schedule, level, budget, ties)
    if leaderboard:
        from socialgym_benchmarks.leaderboard.render import build_leaderboard
        summary["leaderboard"] = build_leaderboard(out / "logs", out, ties=ties)
    return AdaptiveResult(out, plan.planned, played, stop, summary)


def _play_rounds(plan: AdaptivePlan, field: _Field, out: Path, run: dict, levels: Levels) -> int:
    """Play the plan's rounds not looked at yet, each followed by its look (saved in the plan);
    returns the episodes played."""
    played = 0
    for round_ in plan.data["rounds"][len(plan.data["looks"]):]:
        result = tour.run_tournament(field.jobs(round_), out, pool_seed=field.seed, leaderboard=False, **run)
        run["resume"] = True            # only the first call may set old logs aside
        played += result.played
        assessment = assess(_planned_battles(out / "logs", plan, field.agents, run["ties"]), levels.pairs)
        plan.data["looks"].append({"planned": plan.planned, "order": assessment.order,
                                   "resolved": [p.resolved for p in assessment.pairs]})
        plan.save()
    return played


def _stop(plan: AdaptivePlan, budget: int, schedule: list) -> Optional[str]:
    """Why the run stops after its last look: every adjacent pair resolved, or no look left in
    the budget or the schedule; None to go on."""
    last = plan.data["looks"][-1] if plan.data["looks"] else None
    if last and last["resolved"] and all(last["resolved"]):
        return "resolved"
    if plan.planned >= budget or len(plan.data["rounds"]) >= len(schedule):
        return "budget"
    return None


def _plan_next_round(plan: AdaptivePlan, field: _Field, out: Path, budget: int, schedule: list, levels: Levels,
                     first_per_pair: int, ties: str) -> Optional[str]:
    """Add the next round to the plan (saved); "budget" when no block fits in what is left."""
    sizes = field.sizes
    if not plan.data["rounds"]:
        blocks = _first_round(field.agents, field.games, sizes, first_per_pair, plan)
    else:
        battles = _planned_battles(out / "logs", plan, field.agents, ties)
        target = schedule[len(plan.data["rounds"])]
        room = min(budget - plan.planned, max(target - plan.planned, max(sizes.values())))
        blocks = _next_round(assess(battles, levels.pairs), field.agents, field.games, field.layouts, sizes, room,
                             plan)
    if not blocks:
        return "budget"
    plan.add_round(blocks, sizes)
    if plan.planned > budget:
        raise ValueError(f"--budget {budget} is below the first round ({plan.planned} episodes: every "
                         f"pair of policies {first_per_pair} times, whole side rotations)")
    plan.save()
    return None


def _summary(plan: AdaptivePlan, field: _Field, out: Path, stop: str, schedule: list, level: float,
             budget: int, ties: str) -> dict:
    """The run's summary, written to ``out/adaptive.json``: why it stopped, the looks, and the
    final intervals."""
    levels = Levels.of(level, len(schedule), len(field.agents))
    battles = _planned_battles(out / "logs", plan, field.agents, ties)
    assessment = assess(battles, levels.pairs)
    summary = {"stop": stop, "planned_looks": len(schedule), "schedule": schedule, "level": level,
               "correction": "Bonferroni over the planned looks (and, for pair differences, over every pair)",
               "budget": budget, "planned": plan.planned, "looks": plan.data["looks"],
               "final": intervals_at_stop(battles, assessment, levels)}
    atomic_write_json(out / SUMMARY_FILE, summary, indent=1)
    return summary


def _planned_battles(log_dir: Path, plan: AdaptivePlan, agents, ties: str) -> bt.Battles:
    """The battles of the plan's episodes only (a folder may hold others: they never count),
    over the competitive games (as the leaderboard's overall Elo)."""
    from socialgym_benchmarks.ratings import game_info, load_records
    ids = plan.episode_ids()
    records, _ = load_records(log_dir) if log_dir.exists() else ([], {})
    records = [r for r in records if r.get("episode_id") in ids and not game_info(r["game"]).get("cooperative")]
    return bt.collect_battles(records, players=list(agents), ties=ties)


def _next_game(games: Sequence[str], plan: AdaptivePlan) -> str:
    game = games[plan.data["game_cursor"] % len(games)]
    plan.data["game_cursor"] += 1
    return game


def _first_round(agents, games, sizes, first_per_pair, plan) -> list:
    """Every pair of policies, ``first_per_pair`` episodes' worth of blocks, games in turn."""
    blocks = []
    for a in range(len(agents)):
        for b in range(a + 1, len(agents)):
            done = 0
            while done < first_per_pair:
                game = _next_game(games, plan)
                blocks.append((game, _matchup((agents[a], agents[b]), agents, agents, sizes[game])))
                done += sizes[game]
    return blocks


def _next_round(assessment, agents, games, layouts, sizes, episodes, plan) -> list:
    """Blocks for about ``episodes`` episodes (never more), shared by :func:`allocate`."""
    block = max(sizes.values())
    played: dict = {}
    for round_ in plan.data["rounds"]:
        for _, combo, indices in round_["matchups"]:
            for i, a in enumerate(combo):
                for b in combo[i + 1:]:
                    played[(a, b)] = played.get((a, b), 0) + len(indices)
    pairs = plan_round(assessment, played, max(episodes // block, 1 if episodes >= min(sizes.values()) else 0))
    blocks, used = [], 0
    for pair in pairs:
        game = games[plan.data["game_cursor"] % len(games)]
        if used + sizes[game] > episodes:
            break
        plan.data["game_cursor"] += 1
        blocks.append((game, _matchup(pair, assessment.order, agents, len(layouts[game].units))))
        used += sizes[game]
    return blocks
