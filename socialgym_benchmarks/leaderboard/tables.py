"""The leaderboard's tables, each declared once: a :class:`Table` of :class:`Column` entries that the
CSV, Markdown, HTML and console writers (:mod:`socialgym_benchmarks.leaderboard.render`) walk, so a
new column is one entry here; and the cell formats they share (numbers, percentages, intervals,
role-gap marks)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .summary import AXES


def number(value, digits=0):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{digits}f}"


def percent(value):
    return "" if value is None else f"{100 * value:.1f}%"


# how each output marks a gap the data do not pin (leaderboard.gap_status); the worst mark first
GAP_MARKS = {"table": {"not identified": "(n.i.)", "separated": "(sep.)"},
             "figure": {"not identified": "not id.", "separated": "sep."}}


def gap_status(row: dict) -> Optional[str]:
    """A role row's ``gap_status`` (rows written before it existed: from ``gap_identified``)."""
    if row.get("gap") is None:
        return None
    return row.get("gap_status") or ("identified" if row.get("gap_identified") else "not identified")


def worst_mark(marks, style: dict) -> str:
    """The mark of a mean over gaps: the worst of its parts' marks."""
    return next((mark for mark in style.values() if mark in set(marks)), "")


def _gap(row: dict) -> str:
    if row.get("gap") is None:
        return ""
    mark = GAP_MARKS["table"].get(gap_status(row))
    return f"{row['gap']:+.0f}" + (f" {mark}" if mark else "")


def _bound(value, sign: str) -> str:
    """An interval end; None is an unbounded side."""
    return f"{sign}∞" if value is None else f"{value:.0f}"


def _ci(row: dict, lo: str = "lo", hi: str = "hi") -> str:
    return f"[{_bound(row.get(lo), '−')}, {_bound(row.get(hi), '+')}]"


def _gap_ci(row: dict) -> str:
    if row.get("gap") is None or not row.get("gap_identified"):
        return ""
    return _ci(row, "gap_lo", "gap_hi")


def _seconds(value) -> str:
    """Seconds with 3 significant digits (a scripted decision takes microseconds, a model's seconds)."""
    return "" if value is None else f"{value:.3g}"


def _mean_gap(cells) -> str:
    """The mean of a policy's known gaps, marked as the worst of them ('' if none is known)."""
    known = [c for c in cells if c.get("gap") is not None]
    worst = next((status for status in GAP_MARKS["table"] if status in map(gap_status, known)), "identified")
    return _gap({"gap": np.mean([c["gap"] for c in known]), "gap_status": worst}) if known else ""


# ----------------------------------------------------------------------------- the tables
# Every table the leaderboard writes is declared once below, a Table of Columns (a row: a dict, an entry of
# the summary with its game, policy or rank); the CSV, Markdown, HTML and console writers only walk them.
Getter = Callable[[dict], object]


@dataclass(frozen=True)
class Column:
    """One column, in each output that has it. ``title``: the Markdown/HTML header (None: the page
    leaves the column out), ``text``: the cell there and in the console; ``csv``: the column's
    fields in the file, each a row key or (field name, row key) (empty: the file leaves it out);
    ``console``: the console header (None: left out). ``policy``: the cells are policy specs,
    which the console shows by their short names in a column that never cuts them."""
    title: Optional[str]
    text: Optional[Getter] = None
    csv: tuple = ()
    console: Optional[str] = None
    policy: bool = False


@dataclass(frozen=True)
class Table:
    """``columns`` and ``rows`` (summary -> row dicts, as the page and the console show them);
    ``file``: its CSV (None: none), ``file_rows``: the file's rows where they differ (e.g. every
    game's, where the page shows the overall ones); ``title`` / ``console_title``: its headings
    (text, or summary -> text)."""
    title: object
    columns: tuple
    rows: Callable[[dict], list]
    file: Optional[str] = None
    file_rows: Optional[Callable[[dict], list]] = None
    console_title: object = None
    by_group: bool = False       # a row per policy, a column per group (game, category): may be shown turned

    def file_cells(self, summary: dict) -> list[list]:
        """The CSV's header and rows: each column's raw values."""
        fields = [(f, f) if isinstance(f, str) else f for column in self.columns for f in column.csv]
        rows = (self.file_rows or self.rows)(summary)
        return [[name for name, _ in fields], *([row.get(key) for _, key in fields] for row in rows)]

    def page_cells(self, summary: dict, names: Optional[dict] = None) -> tuple[str, list, list]:
        """(title, header, rows) of the Markdown and HTML table: each shown column's text, a
        policy's by its name in ``names`` (spec -> shown name; None: the whole spec)."""
        shown = [column for column in self.columns if column.title is not None]

        def text(column, row):
            value = column.text(row)
            return (names or {}).get(value, value) if column.policy else value
        return (heading(self.title, summary), [column.title for column in shown],
                [[text(column, row) for column in shown] for row in self.rows(summary)])


def heading(title, summary: dict) -> str:
    return title(summary) if callable(title) else title


def _shown(key: str, fmt: Callable = str, *args) -> Getter:
    """The cell ``fmt(row[key], *args)`` (None where the row lacks the key)."""
    return lambda row: fmt(row.get(key), *args)


def _interval(lo: str, hi: str, of: str, as_percent: bool = False) -> Getter:
    """The interval of ``of`` ('' where it is None): Elo ends (None: unbounded), or percentages."""
    return lambda row: ("" if row.get(of) is None else f"[{percent(row[lo])}, {percent(row[hi])}]" if as_percent
                        else _ci(row, lo, hi))


def _policy_rows(groups, label: str = "game", by_name: bool = True) -> list[dict]:
    """A row per group and policy of ``groups`` ((group, {policy: entry}) pairs): the entry with
    its group (under ``label``) and policy; each group's policies by name, or as stored."""
    return [dict(entry, **{label: group, "policy": p}) for group, table in groups
            for p, entry in (sorted(table.items()) if by_name else table.items())]


def _ranked_rows(groups, summary: dict) -> list[dict]:
    """The page's rows of (game, {policy: entry}) pairs: each game's policies in the board's order."""
    return [dict(table[p], game=g, policy=p) for g, table in groups for p in summary["policies"] if table.get(p)]


def _by_policy(title: str, groups: dict, cell: Getter, *extra: Column) -> Table:
    """A page table with a row per policy and a column per group (``groups``: {group: {policy:
    entry}}), each cell ``cell`` of the policy's entry there ({} if none); ``extra`` columns last."""
    def rows(summary):
        return [{"policy": p, "entries": {g: table.get(p, {}) for g, table in groups.items()}}
                for p in summary["policies"]]
    return Table(title, (POLICY, *(Column(g, lambda row, g=g: cell(row["entries"][g])) for g in groups), *extra), rows,
                 by_group=True)


POLICY = Column("policy", _shown("policy"), ("policy",), "policy", policy=True)
GAME = Column("game", _shown("game"), ("game",))
ELO = Column(None, csv=("elo", ("elo_lo", "lo"), ("elo_hi", "hi")))
WIN_RATE = Column("win rate", _shown("rate", percent), (("win_rate", "rate"),))
WILSON = Column("Wilson 95% CI", _interval("lo", "hi", "rate", as_percent=True), (("win_lo", "lo"), ("win_hi", "hi")))

def overall_groups(summary: dict) -> list[tuple[Optional[list], list]]:
    """The policies the overall table ranks against each other, and those shown apart:
    ``[(None, ranked), (games, policies), ...]``, each list in the board's order.

    A pooled Elo compares policies fairly only over the games both played: a policy of one game's own
    roster (``--roster``) would otherwise rank among those that played them all. The ranked group is
    the policies that played the largest set of games at least two policies played (a policy that
    also played more, like a baseline seated in a game's own roster too, counts in it), and those
    that played no competitive game (unrated, as before); every other set of games is its own group,
    ranked within itself, the larger sets first. When every policy played the same games, one group."""
    games = summary["competitive_games"]
    played = {p: frozenset((summary.get("games_played") or {}).get(p, games)) for p in summary["policies"]}
    sets = {s for s in played.values() if s}
    if len(sets) <= 1:
        return [(None, list(summary["policies"]))]

    def covered(s):
        return sum(s <= other for other in played.values())
    main = max(sets, key=lambda s: (covered(s) >= 2, len(s), covered(s), sorted(s)))
    ranked = [p for p in summary["policies"] if not played[p] or played[p] >= main]
    apart: dict = {}
    for p in summary["policies"]:
        if p not in ranked:
            apart.setdefault(played[p], []).append(p)
    order = sorted(apart, key=lambda s: (-len(s), [games.index(g) for g in games if g in s]))
    return [(None, ranked)] + [([g for g in games if g in s], apart[s]) for s in order]


def _overall_rows(summary: dict, group: Optional[int] = None) -> list[dict]:
    """The overall table's rows, each ranked within its group of :func:`overall_groups` (``group``:
    that group's rows only; None: all, the ranked group first)."""
    groups = overall_groups(summary)
    return [dict(summary["overall"][p], rank=i + 1, policy=p)
            for k, (_, members) in enumerate(groups) if group in (None, k) for i, p in enumerate(members)]


def played_only(games: list, summary: dict) -> str:
    """'Played only kuhn_poker' / 'Played only 3 of the 21 competitive games: a, b, c'."""
    listed = ", ".join(games)
    return (f"Played only {listed}" if len(games) == 1 else
            f"Played only {len(games)} of the {len(summary['competitive_games'])} competitive games: {listed}")


def apart_tables(summary: dict) -> list["Table"]:
    """The overall table of each group of policies shown apart (:func:`overall_groups`)."""
    titles = {k: f"{played_only(games, summary)} (ranked among themselves, not against the overall table)"
              for k, (games, _) in enumerate(overall_groups(summary)) if games is not None}
    return [Table(title, OVERALL.columns, lambda s, k=k: _overall_rows(s, k), console_title=title)
            for k, title in titles.items()]


OVERALL = Table(
    "Overall (competitive games)", file="leaderboard.csv",
    rows=lambda s: _overall_rows(s, 0), file_rows=_overall_rows,
    console_title=lambda s: (f"Social Gym leaderboard — {s['episodes']} episodes, "
                             f"{len(s['competitive_games'])} competitive games"),
    columns=(Column("#", _shown("rank"), ("rank",), "#"),
             POLICY,
             Column("Elo (pooled)", _shown("elo", number), ("elo",), "Elo"),
             Column("95% CI", _interval("lo", "hi", "elo"), (("elo_lo", "lo"), ("elo_hi", "hi")), "95% CI"),
             Column("Elo (games equal)", _shown("elo_games_equal", number), ("elo_games_equal",), "games equal"),
             Column("95% CI (games equal)", _interval("games_equal_lo", "games_equal_hi", "elo_games_equal"),
                    ("games_equal_lo", "games_equal_hi")),
             Column(None, csv=("battles",)),                  # the page shows them last: pairwise outcomes
             Column("win rate", _shown("win_rate", percent), ("win_rate",), "win rate"),
             Column("Wilson 95% CI", _interval("win_lo", "win_hi", "win_rate", as_percent=True), ("win_lo", "win_hi")),
             Column(None, csv=("seats", "wins")),
             Column("episodes", _shown("episodes"), ("episodes",), "episodes"),
             Column("pairwise outcomes", _shown("battles"))))
GAMES_EQUAL = Table(
    None, file="games_equal.csv", columns=(Column(None, csv=("group",)), POLICY, ELO),
    rows=lambda s: _policy_rows([("overall", s["game_weighted"]["overall"]),
                                 *sorted(s["game_weighted"]["per_category"].items())], "group", by_name=False))
DECISIONS = Table(
    "Decisions (all games; tokens as the backends report them; cost from --price, per million tokens; "
    "s/decision: wall time from request to reply, a batched call's time shared by its `batch` decisions)",
    file="decisions.csv", console_title="Decisions",
    # the page and the console show the rows of all games, the file each game's rows too
    rows=lambda s: _ranked_rows([("ALL", s["decisions"]["overall"])], s),
    file_rows=lambda s: _policy_rows([("ALL", s["decisions"]["overall"]), *s["decisions"]["per_game"].items()]),
    columns=(Column(None, csv=("game",)),
             POLICY,
             Column("decisions", _shown("decisions"), ("decisions",), "decisions"),
             Column("invalid 1st try", _shown("invalid_first_rate", percent), ("invalid_first_rate",), "invalid 1st try"),
             Column("invalid after re-asks", _shown("invalid_rate", percent), ("invalid_rate",), "invalid after re-asks"),
             Column("fallbacks", _shown("fallbacks"), ("fallbacks",), "fallbacks"),
             Column("prompt tok/decision", _shown("prompt_tokens", number, 1), ("prompt_tokens",), "prompt tok/decision"),
             Column("completion tok/decision", _shown("completion_tokens", number, 1), ("completion_tokens",),
                    "completion tok/decision"),
             Column("cost", _shown("cost", number, 4), ("cost",), "cost"),
             Column("s/decision", _shown("seconds", _seconds), ("seconds",), "s/decision"),
             Column("batch", _shown("batch", number, 1), ("batch",), "batch")))
SEPARATED = Table(
    lambda s: ("Which pairs are separated (the Elo difference's profile interval excludes 0; Bonferroni: "
               f"{s['separated']['level_overall']:.2%} per pair overall, {s['separated']['level_per_game']:.2%} "
               "per pair per game)"),
    file="separated_pairs.csv",
    rows=lambda s: [dict(r, game=g, level=level) for g, rows, level in
                    [("ALL", s["separated"]["overall"], s["separated"]["level_overall"]),
                     *((g, rows, s["separated"]["level_per_game"]) for g, rows in s["separated"]["per_game"].items())]
                    for r in rows],
    columns=(GAME, Column("higher", _shown("higher"), ("higher",), policy=True),
             Column("lower", _shown("lower"), ("lower",), policy=True),
             Column("difference", _shown("difference", number), ("difference",)), Column("interval", _ci, ("lo", "hi")),
             Column("separated", lambda row: "yes" if row["separated"] else "no", ("separated",)),
             Column(None, csv=("level",))))
BATTLE_SHARE = Table(
    lambda s: f"Each game's share of the pooled battles (games equal: each 1/{len(s['competitive_games'])})",
    file="battle_share.csv",
    rows=lambda s: [{"game": g, "category": s["game_info"][g]["category"], "battles": s["game_weighted"]["battles"][g],
                     "share": s["game_weighted"]["battle_share"][g]} for g in s["competitive_games"]],
    columns=(GAME, Column(None, csv=("category",)), Column("battles", _shown("battles"), ("battles",)),
             Column("share", _shown("share", percent), (("share_of_pooled_battles", "share"),))))
PER_GAME_ELO = Table(
    None, file="per_game_elo.csv",
    rows=lambda s: [dict(row, category=s["game_info"][row["game"]]["category"])
                    for row in _policy_rows(s["per_game"].items(), by_name=False)],
    columns=(GAME, Column(None, csv=("category",)), POLICY, ELO, Column(None, csv=("battles",))))
WIN_RATES = Table(
    None, file="win_rates.csv", rows=lambda s: _policy_rows(s["win_rates"].items()),
    columns=(GAME, POLICY, Column(None, csv=("seats", "wins", "draws", "losses")), WIN_RATE, WILSON))
COOPERATIVE = Table(
    "Cooperative games", file="cooperative.csv",
    rows=lambda s: _ranked_rows(s["cooperative"].items(), s),
    file_rows=lambda s: _policy_rows(s["cooperative"].items()),
    columns=(GAME, POLICY, Column(None, csv=("seats", "wins")), WIN_RATE, WILSON,   # the page shows seats last
             Column("coordination", _shown("coordination", number, 2), ("coordination",)),
             Column(None, csv=("coordination_episodes",)), Column("seats", _shown("seats"))))
PROFILES = Table(
    None, file="profiles.csv",
    rows=lambda s: [dict(row, axis=axis) for axis, groups in s["profiles"].items()
                    for row in _policy_rows(groups.items(), "group", by_name=False)],
    columns=(Column(None, csv=("axis", "group")), POLICY, ELO, Column(None, csv=("battles",))))
ROLES = Table(
    "Elo-Main / Elo-Alt", file="role_elo.csv",
    rows=lambda s: _ranked_rows([*s["roles"].items(), ("ALL", s.get("roles_overall", {}))], s),
    file_rows=lambda s: _policy_rows([*s["roles"].items(), ("ALL_HIDDEN_ROLE", s.get("roles_overall", {}))]),
    columns=(GAME, POLICY, Column("Elo-Main", _shown("elo_main", number), ("elo_main", "main_lo", "main_hi")),
             Column("Elo-Alt", _shown("elo_alt", number), ("elo_alt", "alt_lo", "alt_hi")), Column("gap", _gap, ("gap",)),
             Column("gap 95% CI", _gap_ci, ("gap_lo", "gap_hi")),
             Column(None, csv=("gap_boot_lo", "gap_boot_hi", "gap_identified", "gap_status"))))


def file_tables() -> tuple:
    """The tables that have a file, in the order leaderboard.json lists the files."""
    return OVERALL, GAMES_EQUAL, DECISIONS, SEPARATED, BATTLE_SHARE, PER_GAME_ELO, WIN_RATES, COOPERATIVE, PROFILES, ROLES


def page_tables(summary: dict) -> list[Table]:
    """The Markdown and HTML tables, in order; a table of groups only where there are groups."""
    per_category, elo = summary["game_weighted"]["per_category"], _shown("elo", number)
    tables = [OVERALL, *apart_tables(summary)]
    if per_category:
        tables.append(_by_policy("Per category, games equal", {c: per_category[c] for c in sorted(per_category)}, elo))
    tables += [BATTLE_SHARE, SEPARATED, DECISIONS]
    if summary["competitive_games"]:
        tables.append(_by_policy("Per-game Elo", {g: summary["per_game"][g] for g in summary["competitive_games"]}, elo))
    if summary["cooperative"]:
        tables.append(COOPERATIVE)
    if summary["roles"]:
        tables += [_by_policy("Role gap Elo-Alt − Elo-Main (hidden-role games; n.i. = not identified by these data; "
                              "sep. = outcomes separated, the interval is unbounded on one side)", summary["roles"], _gap,
                              Column("mean", lambda row: _mean_gap(row["entries"].values()))), ROLES]
    return tables + [_by_policy(f"Profile by {axis}", groups, elo)
                     for axis in AXES if (groups := summary["profiles"].get(axis))]
