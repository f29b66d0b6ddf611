"""The leaderboard's numbers, computed from episode records (read by
:func:`socialgym_benchmarks.ratings.load_records`): how seats are
grouped (sides, roles, player counts), and ``summarize`` -- overall, per-game, role-conditioned
and per-axis Bradley-Terry Elo with bootstrap intervals, win rates with Wilson intervals.

Rendering them (CSV, Markdown, HTML, figures, the console table) is
:mod:`socialgym_benchmarks.leaderboard.render`; ``build_leaderboard`` there reads logs and writes every file.
Every Elo is an independent Bradley–Terry fit (:mod:`socialgym_benchmarks.ratings`) anchored at mean 1000; ties
are left out or split (``ties``) in every one of them. ``online_elo`` holds the second rating,
the released code's online Elo (K = 32), overall and per game.

Role-conditioned ratings (competitors ``policy|main`` and ``policy|alt``) compare only
cross-team seats of different policies, so ``A|alt`` never meets ``A|main`` or ``B|alt``. With
two policies the battle graph falls apart into {A|main, B|alt} and {B|main, A|alt}: each
component's level is set by the penalty alone, every policy gets the same gap (the mean gap,
which is identified), and a per-policy gap is not. With three or more policies the graph is
connected and every gap is identified. Each role row says which (``gap_identified``).
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Optional

import numpy as np

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.ratings import game_info, games_equal_fit

AXES = ("category", "skill", "information", "communication", "players", "horizon")
CATEGORY_ORDER = ("normal_form", "economic", "bluffing", "hidden_role", "social_strategy", "control")


# ----------------------------------------------------------------------------- seats and groups
def is_hidden_role(info: dict) -> bool:
    return bool(info.get("main_role") and info.get("alt_role"))


def side_label(info: dict):
    """Seat -> "policy|main" / "policy|alt" for a hidden-role game (None: neither side)."""
    roles = {str(r[0]).lower(): r[2] for r in info.get("roles") or () if len(r) >= 3}
    main, alt = str(info["main_role"]).lower(), str(info["alt_role"]).lower()
    main_team, alt_team = roles.get(main), roles.get(alt)

    def label(seat):
        role, team = str(seat.get("role") or "").lower(), seat.get("team") or ""
        if role == main or (main_team and team == main_team):
            return f"{seat.get('policy')}|main"
        if role == alt or (alt_team and team == alt_team):
            return f"{seat.get('policy')}|alt"
        return None
    return label


def player_bucket(n: int) -> str:
    return "2" if n <= 2 else "3-4" if n <= 4 else "5+"


def groups_of(record: dict, info: dict) -> list[tuple[str, str]]:
    """(axis, group) memberships of an episode for the capability profiles."""
    out = [("category", info.get("category", "unknown")),
           ("information", info.get("information", "unknown")),
           ("communication", info.get("communication", "unknown")),
           ("players", player_bucket(len(record.get("roster", [])))),
           ("horizon", info.get("horizon", "unknown"))]
    out.extend(("skill", s) for s in info.get("skills", []))
    return out


# ----------------------------------------------------------------------------- summary
def _battles(records, opts, label=None, players=None) -> bt.Battles:
    return bt.collect_battles(records, label, opts["compare"], players, opts["ties"])


def _rate(battles, name, opts, keep_samples=False) -> bt.Ratings:
    return bt.rate(battles, n_boot=opts["n_boot"], by=opts["by"], seed=bt.stream_seed(opts["seed"], name), C=opts["C"],
                   interval=opts["interval"], keep_samples=keep_samples)


def _fit(records, name, opts, label=None, players=None) -> dict:
    ratings = _rate(_battles(records, opts, label, players), name, opts)
    return {p: v for p, v in ratings.as_dict().items() if v["battles"] > 0}


def _online(records, name, opts, players=None) -> dict:
    return bt.online_elo(_battles(records, opts, players=players), seed=bt.stream_seed(opts["seed"], name))


def summarize(records: list, n_boot: int = bt.N_BOOTSTRAP, by: str = "episode", seed: int = 0,
              C: float = bt.C_DEFAULT, compare: str = "reward", ties: str = "exclude",
              interval: str = "profile", prices: Optional[dict] = None, timing: Optional[dict] = None) -> dict:
    """Every table of the leaderboard, as one JSON-friendly dict. ``interval``: how every Elo
    interval is made, ``profile`` (profile likelihood, default) or ``bootstrap`` (percentile,
    resampling ``by``), see :func:`socialgym_benchmarks.ratings.rate`. ``timing``: the decision
    times beside the logs (:func:`socialgym_env.journal.read_timing`), for the seconds column."""
    if interval not in bt.INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(bt.INTERVALS)}, got {interval!r}")
    opts = {"n_boot": n_boot, "by": by, "seed": seed, "C": C, "compare": compare, "ties": bt.check_ties(ties),
            "interval": interval}
    by_game, infos = _by_game(records)
    games = list(by_game)
    competitive = [g for g in games if not infos[g].get("cooperative")]
    cooperative = [g for g in games if g not in competitive]
    policies = _seated_policies(records)
    summary: dict = {
        "episodes": len(records),
        "settings": {"model": "Bradley-Terry MLE, L2 logistic regression", "C": C, "scale": bt.SCALE,
                     "anchor_mean": bt.ANCHOR, "bootstrap": n_boot, "bootstrap_by": by, "seed": seed,
                     "compare": compare, "ties": ties, "ci": 0.95, "interval": interval},
        "games": games, "competitive_games": competitive, "cooperative_games": cooperative,
        "game_info": _game_infos(by_game, infos),
    }
    comp_records = [r for g in competitive for r in by_game[g]]
    overall = _overall_table(comp_records, policies, opts)
    summary["overall"] = overall
    summary["policies"] = sorted(policies, key=lambda p: -_or_lowest(overall[p]["elo"]))
    summary["per_game"] = {g: _fit(by_game[g], f"game:{g}", opts, players=policies) for g in competitive}
    summary["game_weighted"] = _game_weighted(competitive, by_game, infos, policies, opts)
    summary["games_played"] = games_played(competitive, by_game, policies)
    summary["separated"] = _separated_pairs(comp_records, competitive, by_game, policies, opts, summary["games_played"])
    summary["decisions"] = _decisions(records, by_game, prices, timing)
    for p, row in summary["game_weighted"]["overall"].items():
        overall[p].update(elo_games_equal=row["elo"], games_equal_lo=row["lo"], games_equal_hi=row["hi"])
    summary["win_rates"] = {g: bt.win_rates(by_game[g]) for g in games}
    summary["cooperative"] = {g: _cooperative_table(by_game[g], summary["win_rates"][g]) for g in cooperative}
    summary["profiles"] = _profiles(competitive, by_game, infos, policies, opts)
    summary.update(_roles(competitive, by_game, infos, opts))
    summary["online_elo"] = _online_tables(comp_records, competitive, by_game, policies, opts)
    return summary


GAME_INFO_KEYS = ("name", "category", "information", "communication", "horizon", "skills", "num_players",
                  "cooperative", "main_role", "alt_role")


def _by_game(records: list) -> tuple[dict, dict]:
    """{game: its records} with games by category (CATEGORY_ORDER, unknown ones last) and then by id,
    and {game: its registry info}."""
    by_game = defaultdict(list)
    for record in records:
        by_game[record["game"]].append(record)
    infos = {g: game_info(g) for g in by_game}

    def order(game):
        category = infos[game]["category"]
        return CATEGORY_ORDER.index(category) if category in CATEGORY_ORDER else 99, game
    return {g: by_game[g] for g in sorted(by_game, key=order)}, infos


def _seated_policies(records: list) -> list:
    """Every policy with a seat in ``records``, by name."""
    return sorted({s.get("policy") for r in records for s in r.get("roster", []) if s.get("policy")})


def _game_infos(by_game: dict, infos: dict) -> dict:
    """Each game's registry info as the summary keeps it, with its episodes and whether it has hidden roles."""
    return {g: {k: infos[g].get(k) for k in GAME_INFO_KEYS}
            | {"episodes": len(records), "hidden_role": is_hidden_role(infos[g])} for g, records in by_game.items()}


def _or_lowest(elo: Optional[float]) -> float:
    """An Elo to rank by: an unrated policy (None) below every rated one."""
    return -1e9 if elo is None else elo


def _decisions(records: list, by_game: dict, prices: Optional[dict], timing: Optional[dict]) -> dict:
    """:func:`decision_stats` over all games and per game, with the prices it used."""
    return {"overall": decision_stats(records, prices, timing),
            "per_game": {g: decision_stats(game_records, prices, timing) for g, game_records in by_game.items()},
            "prices_per_million_tokens": {p: list(v) for p, v in (prices or {}).items()}}


def _roles(competitive: list, by_game: dict, infos: dict, opts: dict) -> dict:
    """The role-conditioned fits: ``roles`` per hidden-role game, ``roles_overall`` over them all."""
    hidden = [g for g in competitive if is_hidden_role(infos[g])]
    return {"roles": {g: _role_fit(by_game[g], f"roles:{g}", opts, side_label(infos[g])) for g in hidden},
            "roles_overall": _pooled_roles(hidden, by_game, infos, opts)}


def _online_tables(comp_records: list, competitive: list, by_game: dict, policies: list, opts: dict) -> dict:
    """The second rating: the released code's online Elo, overall and per competitive game."""
    return {"settings": {"model": "online Elo (the paper's released code)", "k": bt.ONLINE_K, "start": bt.ANCHOR,
                         "passes": 1, "order": "episodes shuffled with the leaderboard seed", "ties": opts["ties"]},
            "overall": _online(comp_records, "online:overall", opts, players=policies),
            "per_game": {g: _online(by_game[g], f"online:game:{g}", opts, players=policies) for g in competitive}}


def _overall_table(comp_records: list, policies: list, opts: dict) -> dict:
    """Elo over the competitive games pooled, with each policy's win rate and episode count."""
    overall = _fit(comp_records, "overall", opts, players=policies)
    rates_all = bt.win_rates(comp_records)
    episodes_per_policy = defaultdict(int)
    for r in comp_records:
        for p in {s.get("policy") for s in r.get("roster", [])}:
            episodes_per_policy[p] += 1
    for p in policies:
        row = overall.setdefault(p, {"elo": None, "lo": None, "hi": None, "battles": 0, "battle_wins": 0})
        w = rates_all.get(p, {"rate": None, "lo": None, "hi": None, "seats": 0, "wins": 0})
        row.update(win_rate=w["rate"], win_lo=w["lo"], win_hi=w["hi"], seats=w["seats"], wins=w["wins"],
                   episodes=episodes_per_policy.get(p, 0))
    return overall


def _game_weighted(competitive: list, by_game: dict, infos: dict, policies: list, opts: dict) -> dict:
    """Bradley–Terry with every competitive game counting equally (the Kaggle Game Arena
    weighting), overall and per category, beside the pooled fit, in which a game counts by its
    battles; and each game's share of the pooled battles.

    A game's battles get weight (all battles / games) / (its battles), so the weighted total is
    the pooled one. Intervals as the board's (:func:`games_equal_fit`)."""
    battles = {g: _battles(by_game[g], opts, players=policies) for g in competitive}
    total = sum(b.n for b in battles.values())
    share = {g: (b.n / total if total else 0.0) for g, b in battles.items()}
    groups = {"overall": competitive}
    for g in competitive:
        groups.setdefault(f"category:{infos[g].get('category', 'unknown')}", []).append(g)
    fits = {name: games_equal_fit([battles[g] for g in games], policies, opts, f"games_equal:{name}")
            for name, games in groups.items()}
    return {"overall": fits.pop("overall"),
            "per_category": {name.split(":", 1)[1]: fit for name, fit in fits.items()},
            "battle_share": share, "battles": {g: b.n for g, b in battles.items()}}


def games_played(competitive: list, by_game: dict, policies: list) -> dict:
    """{policy: the competitive games it has a seat in}: a policy that played some of them only
    (a game's own roster, ``--roster``) has an overall Elo that rests on those games alone."""
    seated = {g: {s.get("policy") for r in by_game[g] for s in r.get("roster", [])} for g in competitive}
    return {p: [g for g in competitive if p in seated[g]] for p in policies}


def _separated_pairs(comp_records: list, competitive: list, by_game: dict, policies: list, opts: dict,
                     played_in: dict) -> dict:
    """Which pairs of policies the data tell apart, overall and per game: the profile-likelihood
    interval of each pair's Elo difference (whatever the board's interval method: the bootstrap
    collapses under separation), at a Bonferroni-corrected level so that the whole table holds
    at 95% (overall: one family of all pairs; per game: one family of every game's pairs).

    A family counts the pairs it compares: overall, the pairs that share a competitive game
    (a pair with none in common, e.g. two policies of two games' own rosters, would be told
    apart only through other policies' strengths in other games, so it is listed in
    ``no_common_game`` instead); per game, the pairs seated in that game. When every policy
    plays every game that is every pair, and every pair in every game. ``played_in``:
    :func:`games_played`."""
    def pairs_of(battles, level, compared) -> list:
        elo = bt.fit_bt(battles.win_matrix(), opts["C"])
        wins = battles.win_matrix()
        played = wins.sum(0) + wins.sum(1)
        rows = []
        for a, b in itertools.combinations(range(len(battles.players)), 2):
            if not (played[a] and played[b]) or frozenset((battles.players[a], battles.players[b])) not in compared:
                continue
            contrast = np.zeros(len(battles.players))
            contrast[a], contrast[b] = 1.0, -1.0
            lo, hi = bt.contrast_interval(battles, contrast, elo, level)
            first, second = (a, b) if elo[a] >= elo[b] else (b, a)
            sign = 1.0 if first == a else -1.0
            lo, hi = sorted((sign * lo, sign * hi))
            rows.append({"higher": battles.players[first], "lower": battles.players[second],
                         "difference": float(elo[first] - elo[second]), "lo": bt.finite_or_none(lo),
                         "hi": bt.finite_or_none(hi), "separated": bool(lo > 0)})
        return rows

    per_game = {g: {frozenset(pair) for pair in itertools.combinations([p for p in policies if g in played_in[p]], 2)}
                for g in competitive}
    shared = set().union(*per_game.values())
    overall_level = 1 - 0.05 / max(1, len(shared))
    game_level = 1 - 0.05 / max(1, sum(map(len, per_game.values())))
    return {"overall": pairs_of(_battles(comp_records, opts, players=policies), overall_level, shared),
            "per_game": {g: pairs_of(_battles(by_game[g], opts, players=policies), game_level, per_game[g])
                         for g in competitive},
            "no_common_game": [list(pair) for pair in itertools.combinations(policies, 2)
                               if frozenset(pair) not in shared],
            "level_overall": overall_level, "level_per_game": game_level,
            "method": "profile likelihood of each pair's Elo difference, Bonferroni over the table's pairs"}


def decision_stats(records: list, prices: Optional[dict] = None, timing: Optional[dict] = None) -> dict:
    """Per policy, over every decision its seats made in ``records`` (all games, cooperative
    ones too): ``decisions``; ``invalid_first_rate`` (the first reply gave no legal action:
    unparsed, a backend error, or refused by the game); ``invalid_rate`` (still invalid after
    the re-asks, as the game logged the turn); ``fallbacks`` (turns the game's fallback
    played); ``prompt_tokens`` / ``completion_tokens`` per decision (summed over a decision's
    attempts, as the backends report them; None for policies that log no usage, e.g. scripted
    ones); and ``cost`` in the prices' currency when ``prices`` has the policy: {spec: (per
    million prompt tokens, per million completion tokens)}; ``seconds`` per decision, from
    ``timing`` ({episode_id: {turn: (seconds, batch)}}, kept beside the logs, not in them, so the
    records stay a function of the seed): the wall time of the policy call that made the
    decision, from request to reply; a batched call's time is shared by its decisions, so this is
    what a decision waits, and ``batch`` (the mean decisions per call) tells how many shared it.
    None where no decision of the policy has a time (logs from before, or another runner)."""
    totals: dict = defaultdict(lambda: {"decisions": 0, "invalid_first": 0, "invalid": 0, "fallbacks": 0,
                                        "prompt_tokens": 0, "completion_tokens": 0, "with_usage": 0,
                                        "timed": 0, "seconds": 0.0, "batch": 0})
    for record in records:
        policy_of = {seat.get("agent"): seat.get("policy") for seat in record.get("roster", [])}
        times = (timing or {}).get(record.get("episode_id"), {})
        for number, turn in enumerate(record.get("turns") or ()):
            policy = policy_of.get(turn.get("agent"))
            if policy is not None:
                _count_decision(totals[policy], turn, times.get(number))
    return {policy: _per_decision(row, (prices or {}).get(policy)) for policy, row in totals.items()}


def _count_decision(row: dict, turn: dict, time: Optional[tuple]) -> None:
    """Add one logged turn to its policy's counts; ``time``: (seconds, batch) of its call, or None."""
    if time is not None:
        row["timed"] += 1
        row["seconds"] += time[0]
        row["batch"] += time[1]
    attempts = (turn.get("agent_meta") or {}).get("attempts") or []
    row["decisions"] += 1
    row["invalid"] += not turn.get("valid", True)
    row["invalid_first"] += not turn.get("valid", True) or bool(attempts and "action" not in attempts[0])
    row["fallbacks"] += bool(turn.get("fallback"))
    usage = [a["usage"] for a in attempts if isinstance(a.get("usage"), dict)]
    if usage:
        row["with_usage"] += 1
        row["prompt_tokens"] += sum(u.get("prompt_tokens") or 0 for u in usage)
        row["completion_tokens"] += sum(u.get("new_tokens") or 0 for u in usage)


def _per_decision(row: dict, price: Optional[tuple]) -> dict:
    """A policy's counts as rates and means per decision (None where nothing was counted); the cost
    at ``price`` (per million prompt tokens, per million completion tokens), if given."""
    n, used, timed = row["decisions"], row["with_usage"], row["timed"]
    cost = None if price is None else (row["prompt_tokens"] * price[0] + row["completion_tokens"] * price[1]) / 1e6
    return {"decisions": n, "invalid_first_rate": row["invalid_first"] / n if n else None,
            "invalid_rate": row["invalid"] / n if n else None, "fallbacks": row["fallbacks"],
            "prompt_tokens": row["prompt_tokens"] / used if used else None,
            "completion_tokens": row["completion_tokens"] / used if used else None, "cost": cost,
            "seconds": row["seconds"] / timed if timed else None, "batch": row["batch"] / timed if timed else None}


def _cooperative_table(records: list, win_rates: dict) -> dict:
    """A cooperative game: win rate and mean coordination per policy."""
    coordination = defaultdict(list)
    for r in records:
        value = (r.get("metrics") or {}).get("coordination")
        if value is None:
            continue
        for p in {s.get("policy") for s in r.get("roster", [])}:
            coordination[p].append(float(value))
    table = {}
    for p, w in win_rates.items():
        values = coordination.get(p, [])
        table[p] = dict(w, coordination=(float(np.mean(values)) if values else None),
                        coordination_episodes=len(values))
    return table


def _profiles(competitive: list, by_game: dict, infos: dict, policies: list, opts: dict) -> dict:
    """Capability profiles: one refit per group of competitive games along each axis."""
    grouped = defaultdict(list)
    for g in competitive:
        for r in by_game[g]:
            for axis, group in groups_of(r, infos[g]):
                grouped[(axis, str(group))].append(r)
    profiles: dict = {axis: {} for axis in AXES}
    for (axis, group), recs in sorted(grouped.items()):
        profiles[axis][group] = _fit(recs, f"profile:{axis}:{group}", opts, players=policies)
    return profiles


def _pooled_roles(hidden: list, by_game: dict, infos: dict, opts: dict) -> dict:
    """One role-conditioned fit over all hidden-role games, each episode labelled by its own
    game's sides (competitors are policy|main and policy|alt)."""
    if not hidden:
        return {}
    pooled = [dict(r, _label=side_label(infos[g])) for g in hidden for r in by_game[g]]
    return _role_fit(pooled, "roles:all", opts)


def _role_fit(records: list, name: str, opts: dict, label=None) -> dict:
    battles = _battles(records, opts, label)
    ratings = _rate(battles, name, opts, keep_samples=True)
    fit = {p: v for p, v in ratings.as_dict().items() if v["battles"] > 0}
    return _role_table(fit, battles, ratings)


def _role_table(fit: dict, battles: bt.Battles, ratings: bt.Ratings) -> dict:
    """Per policy: Elo-Main, Elo-Alt (with CIs and battles) and the gap Alt − Main with its own
    interval: ``gap_lo``/``gap_hi`` by the leaderboard's interval method (profile likelihood
    of the contrast, or the bootstrap), ``gap_boot_lo``/``gap_boot_hi`` always the percentile
    bootstrap by episode (None where a side is unbounded or not identified).
    ``gap_identified``: whether the data pin this policy's gap, i.e. its contrast lies in the
    row space of the design matrix (:func:`socialgym_benchmarks.ratings.estimable`); when not, the
    gap shown is the penalty's split of what is identified (e.g. the mean gap of two policies).
    ``gap_status`` says what the data pin, whatever the interval method: ``"not identified"``
    (the rank test fails), ``"separated"`` (identified, but the outcomes are separated in the
    gap's direction: its 95% profile-likelihood interval has an infinite end, so the data do
    not pin its size, and a bootstrap interval collapses there), or
    ``"identified"``."""
    table = defaultdict(dict)
    for name, v in fit.items():
        policy, _, side = name.rpartition("|")
        table[policy].update({f"elo_{side}": v["elo"], f"{side}_lo": v["lo"], f"{side}_hi": v["hi"],
                              f"{side}_battles": v["battles"]})
    index = {p: i for i, p in enumerate(battles.players)}
    for policy, row in table.items():
        row.update(gap=None, gap_lo=None, gap_hi=None, gap_boot_lo=None, gap_boot_hi=None, gap_identified=False,
                   gap_status=None)
        if row.get("elo_alt") is None or row.get("elo_main") is None:
            continue
        alt, main = index[f"{policy}|alt"], index[f"{policy}|main"]
        contrast = np.zeros(len(battles.players))
        contrast[alt], contrast[main] = 1.0, -1.0
        row["gap"] = row["elo_alt"] - row["elo_main"]
        row["gap_identified"] = bt.estimable(battles, contrast)
        row["gap_status"] = "not identified"
        if not row["gap_identified"]:
            continue
        if ratings.samples is not None:
            boot = np.percentile(ratings.samples[:, alt] - ratings.samples[:, main], [2.5, 97.5])
            row["gap_boot_lo"], row["gap_boot_hi"] = float(boot[0]), float(boot[1])
        # the profile interval also decides separation under --interval bootstrap, whose
        # resamples cannot show it
        lo, hi = bt.contrast_interval(battles, contrast, ratings.elo)
        row["gap_status"] = "identified" if np.isfinite([lo, hi]).all() else "separated"
        if ratings.interval == "profile":
            row["gap_lo"], row["gap_hi"] = bt.finite_or_none(lo), bt.finite_or_none(hi)
        else:
            row["gap_lo"], row["gap_hi"] = row["gap_boot_lo"], row["gap_boot_hi"]
    return dict(table)
