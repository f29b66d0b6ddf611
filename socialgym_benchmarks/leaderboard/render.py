"""The leaderboard's files, rebuilt from episode logs alone (the numbers: :mod:`socialgym_benchmarks.leaderboard.summary`).

``build_leaderboard(logdir, outdir)`` reads every ``*.jsonl`` under ``logdir``
(``socialgym_env.logs.iter_log_dir``), skips failed and unfinished records (counted), and writes
to ``outdir`` a CSV per declared table below (``Table.file``), ``leaderboard.json`` (the summary
it returns, with ``online_elo``: the released code's online Elo), ``leaderboard.md`` and a
self-contained ``leaderboard.html``, the figures ``elo_heatmap.png`` (paper Figure 2) and
``role_gap.png`` (paper Table 6). What each file holds: docs/tournament.md, "Outputs".
"""
from __future__ import annotations

import base64
import csv
import html
import json
import math
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from socialgym_agents.specs import short_names
from socialgym_env.atomic import atomic_file, atomic_savefig, atomic_write_text
from socialgym_env.errors import LogFormatError, UnknownGameError
from socialgym_env.journal import read_timing
from socialgym_env.registry import game_ids

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.ratings import load_records, skipped_note

from .summary import AXES, summarize


# ----------------------------------------------------------------------------- files
def _fmt(value, digits=0):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{digits}f}"


def _pct(value):
    return "" if value is None else f"{100 * value:.1f}%"


def write_csvs(summary: dict, outdir: Path) -> dict:
    """Each declared table that has a file (``Table.file``) as CSV in ``outdir``; returns {file: path}."""
    files = {}
    for table in _file_tables():
        path = outdir / table.file
        with atomic_file(path, "w", newline="") as handle:
            csv.writer(handle).writerows(table.file_cells(summary))
        files[table.file] = str(path)
    return files


def _heatmap_matrix(summary):
    games, policies = summary["competitive_games"], summary["policies"]
    m = np.full((len(policies), len(games)), np.nan)
    for j, g in enumerate(games):
        for i, p in enumerate(policies):
            v = summary["per_game"].get(g, {}).get(p)
            if v:
                m[i, j] = v["elo"]
    return m


UNBOUNDED_BAR = 600.0


def plot_elo_heatmap(summary: dict, path: Path) -> None:
    """Per-game Elo heatmap (rows sorted by overall Elo, columns grouped by category) with
    the overall Elo and its 95% CI on the right (paper Figure 2)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games, policies = summary["competitive_games"], summary["policies"]
    m = _heatmap_matrix(summary)
    fig_w = max(8.0, 1.0 + 0.7 * len(games) + 4.0)
    fig_h = max(3.0, 1.6 + 0.5 * len(policies))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(fig_w, fig_h),
                                  gridspec_kw={"width_ratios": [max(1, len(games)), 4]})
    if games and policies:
        span = np.nanmax(np.abs(m - 1000)) if np.isfinite(m).any() else 100
        span = max(50.0, float(span))
        ax.imshow(m, cmap="RdBu_r", vmin=1000 - span, vmax=1000 + span, aspect="auto")
        for i in range(len(policies)):
            for j in range(len(games)):
                if np.isfinite(m[i, j]):
                    ax.text(j, i, f"{m[i, j]:.0f}", ha="center", va="center", fontsize=7)
        cats = [summary["game_info"][g]["category"] for g in games]
        for j in range(1, len(games)):
            if cats[j] != cats[j - 1]:
                ax.axvline(j - 0.5, color="black", linewidth=1.5)
        ax.set_xticks(range(len(games)))
        ax.set_xticklabels([summary["game_info"][g].get("name") or g for g in games], rotation=60,
                           ha="right", fontsize=7)
        ax.set_yticks(range(len(policies)))
        ax.set_yticklabels(list(short_names(policies).values()), fontsize=8)
    else:
        ax.text(0.5, 0.5, "no competitive games", ha="center", va="center")
        ax.set_axis_off()
    ax.set_title("Per-game Elo")
    ys = np.arange(len(policies))
    elos = [summary["overall"][p]["elo"] for p in policies]
    ok = [i for i, e in enumerate(elos) if e is not None]
    if ok:
        e = np.array([elos[i] for i in ok])
        # an unbounded side (None) is drawn UNBOUNDED_BAR long: past every finite bar of a usual board
        lo = np.array([_or(summary["overall"][policies[i]]["lo"], v - UNBOUNDED_BAR) for i, v in zip(ok, e)])
        hi = np.array([_or(summary["overall"][policies[i]]["hi"], v + UNBOUNDED_BAR) for i, v in zip(ok, e)])
        # A policy that wins everything can sit outside its own bootstrap interval (the fit is
        # penalised, the resamples saturate): clip the bar ends instead of failing the plot.
        xerr = [np.clip(e - lo, 0, None), np.clip(hi - e, 0, None)]
        ax2.errorbar(e, ys[ok], xerr=xerr, fmt="o", color="tab:blue", capsize=3)
        for i, v in zip(ok, e):
            ax2.annotate(f"{v:.0f}", (v, ys[i]), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    ax2.axvline(1000, color="grey", linestyle=":")
    ax2.set_ylim(len(policies) - 0.5, -0.5)
    ax2.set_yticks(ys)
    ax2.set_yticklabels([])
    ax2.set_xlabel("Overall Elo (95% CI)")
    ax2.set_title("Overall")
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=120)
    plt.close(fig)


def plot_role_gap(summary: dict, path: Path) -> None:
    """Elo-Alt − Elo-Main per policy × hidden-role game, with row means (paper Table 6)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = list(summary["roles"])
    policies = summary["policies"]
    fig_w = max(5.0, 2.5 + 1.0 * (len(games) + 1))
    fig, ax = plt.subplots(figsize=(fig_w, max(2.5, 1.5 + 0.5 * len(policies))))
    if not games:
        ax.text(0.5, 0.5, "no hidden-role games in these logs", ha="center", va="center")
        ax.set_axis_off()
    else:
        m = np.full((len(policies), len(games) + 1), np.nan)
        marks = np.full(m.shape, "", dtype=object)
        for j, g in enumerate(games):
            for i, p in enumerate(policies):
                row = summary["roles"][g].get(p, {})
                if row.get("gap") is not None:
                    m[i, j] = row["gap"]
                    marks[i, j] = GAP_MARKS["figure"].get(gap_status(row), "")
        for i in range(len(policies)):
            marks[i, -1] = _worst_mark(marks[i, :-1], GAP_MARKS["figure"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m[:, -1] = np.nanmean(m[:, :-1], axis=1)
        span = max(50.0, float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 50.0)
        ax.imshow(m, cmap="PuOr", vmin=-span, vmax=span, aspect="auto")
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                if np.isfinite(m[i, j]):
                    mark = f"\n{marks[i, j]}" if marks[i, j] else ""
                    ax.text(j, i, f"{m[i, j]:+.0f}{mark}", ha="center", va="center", fontsize=7)
        ax.axvline(len(games) - 0.5, color="black", linewidth=1.5)
        ax.set_xticks(range(len(games) + 1))
        ax.set_xticklabels([summary["game_info"][g].get("name") or g for g in games] + ["Mean"],
                           rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(policies)))
        ax.set_yticklabels(list(short_names(policies).values()), fontsize=8)
    # Wrapped to the figure's width (one line was clipped on narrow figures).
    title = "Role gap: Elo-Alt − Elo-Main\n(positive = minority/deceptive side stronger)"
    if games and (marks == GAP_MARKS["figure"]["not identified"]).any():
        title += "\nnot id. = the data cannot tell this policy's gap (e.g. two policies: only their mean gap)"
    if games and (marks == GAP_MARKS["figure"]["separated"]).any():
        title += "\nsep. = outcomes separated: the gap's interval is unbounded, the data do not pin its size"
    width = int(13 * fig_w)         # characters of 8-pt text per line of the figure's width
    ax.set_title("\n".join(textwrap.fill(line, width) for line in title.split("\n")), fontsize=8)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=120)
    plt.close(fig)


# how each output marks a gap the data do not pin (leaderboard.gap_status); the worst mark first
GAP_MARKS = {"table": {"not identified": "(n.i.)", "separated": "(sep.)"},
             "figure": {"not identified": "not id.", "separated": "sep."}}


def gap_status(row: dict) -> Optional[str]:
    """A role row's ``gap_status`` (rows written before it existed: from ``gap_identified``)."""
    if row.get("gap") is None:
        return None
    return row.get("gap_status") or ("identified" if row.get("gap_identified") else "not identified")


def _worst_mark(marks, style: dict) -> str:
    """The mark of a mean over gaps: the worst of its parts' marks."""
    return next((mark for mark in style.values() if mark in set(marks)), "")


def _gap(row: dict) -> str:
    if row.get("gap") is None:
        return ""
    mark = GAP_MARKS["table"].get(gap_status(row))
    return f"{row['gap']:+.0f}" + (f" {mark}" if mark else "")


def role_gap_note(summary: dict, names: Optional[dict] = None) -> str:
    """One line per kind of gap the data do not pin, naming the games and policies ('' if none):
    the console shows no role tables, so it says this much. ``names``: policy -> shown name."""
    names = names or {}
    lines = []
    for status, why in (("not identified", "not identified by these rosters (no interval)"),
                        ("separated", "separated outcomes (the interval is unbounded on one side)")):
        where = [f"{g} ({', '.join(names.get(p, p) for p, row in table.items() if gap_status(row) == status)})"
                 for g, table in list(summary.get("roles", {}).items()) + [("ALL_HIDDEN_ROLE", summary.get("roles_overall", {}))]
                 if any(gap_status(row) == status for row in table.values())]
        if where:
            lines.append(f"Role gaps {why}: {'; '.join(where)}.")
    return "\n".join(lines)


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

    def file_cells(self, summary: dict) -> list[list]:
        """The CSV's header and rows: each column's raw values."""
        fields = [(f, f) if isinstance(f, str) else f for column in self.columns for f in column.csv]
        rows = (self.file_rows or self.rows)(summary)
        return [[name for name, _ in fields], *([row.get(key) for _, key in fields] for row in rows)]

    def page_cells(self, summary: dict) -> tuple[str, list, list]:
        """(title, header, rows) of the Markdown and HTML table: each shown column's text."""
        shown = [column for column in self.columns if column.title is not None]
        return (_heading(self.title, summary), [column.title for column in shown],
                [[column.text(row) for column in shown] for row in self.rows(summary)])


def _heading(title, summary: dict) -> str:
    return title(summary) if callable(title) else title


def _shown(key: str, fmt: Callable = str, *args) -> Getter:
    """The cell ``fmt(row[key], *args)`` (None where the row lacks the key)."""
    return lambda row: fmt(row.get(key), *args)


def _interval(lo: str, hi: str, of: str, percent: bool = False) -> Getter:
    """The interval of ``of`` ('' where it is None): Elo ends (None: unbounded), or percentages."""
    return lambda row: ("" if row.get(of) is None else f"[{_pct(row[lo])}, {_pct(row[hi])}]" if percent
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
    return Table(title, (POLICY, *(Column(g, lambda row, g=g: cell(row["entries"][g])) for g in groups), *extra), rows)


POLICY = Column("policy", _shown("policy"), ("policy",), "policy", policy=True)
GAME = Column("game", _shown("game"), ("game",))
ELO = Column(None, csv=("elo", ("elo_lo", "lo"), ("elo_hi", "hi")))
WIN_RATE = Column("win rate", _shown("rate", _pct), (("win_rate", "rate"),))
WILSON = Column("Wilson 95% CI", _interval("lo", "hi", "rate", percent=True), (("win_lo", "lo"), ("win_hi", "hi")))

OVERALL = Table(
    "Overall (competitive games)", file="leaderboard.csv",
    rows=lambda s: [dict(s["overall"][p], rank=i + 1, policy=p) for i, p in enumerate(s["policies"])],
    console_title=lambda s: (f"Social Gym leaderboard — {s['episodes']} episodes, "
                             f"{len(s['competitive_games'])} competitive games"),
    columns=(Column("#", _shown("rank"), ("rank",), "#"),
             POLICY,
             Column("Elo (pooled)", _shown("elo", _fmt), ("elo",), "Elo"),
             Column("95% CI", _interval("lo", "hi", "elo"), (("elo_lo", "lo"), ("elo_hi", "hi")), "95% CI"),
             Column("Elo (games equal)", _shown("elo_games_equal", _fmt), ("elo_games_equal",), "games equal"),
             Column("95% CI (games equal)", _interval("games_equal_lo", "games_equal_hi", "elo_games_equal"),
                    ("games_equal_lo", "games_equal_hi")),
             Column(None, csv=("battles",)),                  # the page shows them last: pairwise outcomes
             Column("win rate", _shown("win_rate", _pct), ("win_rate",), "win rate"),
             Column("Wilson 95% CI", _interval("win_lo", "win_hi", "win_rate", percent=True), ("win_lo", "win_hi")),
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
             Column("invalid 1st try", _shown("invalid_first_rate", _pct), ("invalid_first_rate",), "invalid 1st try"),
             Column("invalid after re-asks", _shown("invalid_rate", _pct), ("invalid_rate",), "invalid after re-asks"),
             Column("fallbacks", _shown("fallbacks"), ("fallbacks",), "fallbacks"),
             Column("prompt tok/decision", _shown("prompt_tokens", _fmt, 1), ("prompt_tokens",), "prompt tok/decision"),
             Column("completion tok/decision", _shown("completion_tokens", _fmt, 1), ("completion_tokens",),
                    "completion tok/decision"),
             Column("cost", _shown("cost", _fmt, 4), ("cost",), "cost"),
             Column("s/decision", _shown("seconds", _seconds), ("seconds",), "s/decision"),
             Column("batch", _shown("batch", _fmt, 1), ("batch",), "batch")))
SEPARATED = Table(
    lambda s: ("Which pairs are separated (the Elo difference's profile interval excludes 0; Bonferroni: "
               f"{s['separated']['level_overall']:.2%} per pair overall, {s['separated']['level_per_game']:.2%} "
               "per pair per game)"),
    file="separated_pairs.csv",
    rows=lambda s: [dict(r, game=g, level=level) for g, rows, level in
                    [("ALL", s["separated"]["overall"], s["separated"]["level_overall"]),
                     *((g, rows, s["separated"]["level_per_game"]) for g, rows in s["separated"]["per_game"].items())]
                    for r in rows],
    columns=(GAME, Column("higher", _shown("higher"), ("higher",)), Column("lower", _shown("lower"), ("lower",)),
             Column("difference", _shown("difference", _fmt), ("difference",)), Column("interval", _ci, ("lo", "hi")),
             Column("separated", lambda row: "yes" if row["separated"] else "no", ("separated",)),
             Column(None, csv=("level",))))
BATTLE_SHARE = Table(
    lambda s: f"Each game's share of the pooled battles (games equal: each 1/{len(s['competitive_games'])})",
    file="battle_share.csv",
    rows=lambda s: [{"game": g, "category": s["game_info"][g]["category"], "battles": s["game_weighted"]["battles"][g],
                     "share": s["game_weighted"]["battle_share"][g]} for g in s["competitive_games"]],
    columns=(GAME, Column(None, csv=("category",)), Column("battles", _shown("battles"), ("battles",)),
             Column("share", _shown("share", _pct), (("share_of_pooled_battles", "share"),))))
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
             Column("coordination", _shown("coordination", _fmt, 2), ("coordination",)),
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
    columns=(GAME, POLICY, Column("Elo-Main", _shown("elo_main", _fmt), ("elo_main", "main_lo", "main_hi")),
             Column("Elo-Alt", _shown("elo_alt", _fmt), ("elo_alt", "alt_lo", "alt_hi")), Column("gap", _gap, ("gap",)),
             Column("gap 95% CI", _gap_ci, ("gap_lo", "gap_hi")),
             Column(None, csv=("gap_boot_lo", "gap_boot_hi", "gap_identified", "gap_status"))))


def _file_tables() -> tuple:
    """The tables that have a file, in the order leaderboard.json lists the files."""
    return OVERALL, GAMES_EQUAL, DECISIONS, SEPARATED, BATTLE_SHARE, PER_GAME_ELO, WIN_RATES, COOPERATIVE, PROFILES, ROLES


def _page_tables(summary: dict) -> list[Table]:
    """The Markdown and HTML tables, in order; a table of groups only where there are groups."""
    per_category, elo = summary["game_weighted"]["per_category"], _shown("elo", _fmt)
    tables = [OVERALL]
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


def separation_note(separated: dict, names: Optional[dict] = None) -> str:
    """The main job's verdict: which pairs are told apart, overall and per game, and which pairs
    share no game to be compared in. ``names``: policy -> shown name."""
    names = names or {}

    def pair(row, sign):
        return f"{names.get(row['higher'], row['higher'])} {sign} {names.get(row['lower'], row['lower'])}"

    def verdict(rows):
        apart = [pair(r, ">") for r in rows if r["separated"]]
        close = [pair(r, "~") for r in rows if not r["separated"]]
        return ("separated: " + ", ".join(apart) if apart else "no pair separated") + \
            ("; not separated: " + ", ".join(close) if close and apart else "")
    lines = [f"Overall ({separated['level_overall']:.2%} interval per pair, Bonferroni): {verdict(separated['overall'])}"]
    apart = separated.get("no_common_game") or []
    if apart:
        lines[0] += ("; not compared (no game in common): "
                     + ", ".join(f"{names.get(a, a)} / {names.get(b, b)}" for a, b in apart))
    per_game = {g: rows for g, rows in separated["per_game"].items() if any(r["separated"] for r in rows)}
    lines.append(f"Per game ({separated['level_per_game']:.2%} per pair): "
                 + ("; ".join(f"{g}: " + ", ".join(pair(r, ">") for r in rows if r["separated"])
                              for g, rows in per_game.items())
                    if per_game else "no pair separated in any game") + ".")
    return "\n".join(lines)


def some_games_note(summary: dict, names: Optional[dict] = None) -> str:
    """One line on the policies that played only some of the competitive games ('' if none): their
    overall Elo rests on those games alone."""
    names = names or {}
    games = summary["competitive_games"]
    played = summary.get("games_played") or {}
    groups: dict = {}
    for p in summary["policies"]:
        if 0 < len(played.get(p, games)) < len(games):
            groups.setdefault(tuple(played[p]), []).append(names.get(p, p))
    if not groups:
        return ""
    parts = [f"{', '.join(who)} ({', '.join(where) if len(where) <= 3 else f'{len(where)} games'})"
             for where, who in groups.items()]
    return (f"Played only some of the {len(games)} competitive games, so their overall Elo rests on those "
            f"alone and meets the others' only through the opponents they share: {'; '.join(parts)}.")


def names_note(names: dict, intro: str = "Shown by shorter names (the files give the whole specs):") -> str:
    """The whole spec of every policy shown by a shorter name, one a line ('' if none is)."""
    longer = [f"  {name} = {spec}" for spec, name in names.items() if name != spec]
    return "\n".join([intro, *longer]) if longer else ""


def _or(value, default):
    return default if value is None else value


def md_cell(value) -> str:
    """A table cell safe in Markdown: no column break, no raw HTML, one line."""
    return (str(value).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\n", " "))


def interval_note(settings: dict) -> str:
    """How the 95% intervals were made, for the page headers."""
    if settings.get("interval", "bootstrap") == "profile":
        return ("95% profile-likelihood CIs (Firth-penalised, widened for the episodes' clustering; "
                "±∞: the data bound that side not at all)")
    return f"95% bootstrap CIs ({settings['bootstrap']} resamples by {settings['bootstrap_by']})"


def write_markdown(summary: dict, path: Path, notes: list) -> None:
    lines = ["# Social Gym leaderboard", "",
             f"{summary['episodes']} episodes; Bradley–Terry Elo (C={summary['settings']['C']}, mean 1000), "
             f"{interval_note(summary['settings'])}.", ""]
    for note in notes:                # each its own paragraph, its lines kept (hard breaks)
        lines += [note.replace("\n", "  \n"), ""]
    for title, header, rows in (table.page_cells(summary) for table in _page_tables(summary)):
        lines += [f"## {title}", "", "| " + " | ".join(map(md_cell, header)) + " |",
                  "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows]
        lines.append("")
    lines += ["![per-game Elo](elo_heatmap.png)", "", "![role gap](role_gap.png)", ""]
    atomic_write_text(path, "\n".join(lines))


def write_game_replays(records: list, outdir: Path) -> dict:
    """One replay page per game (its first logged episode, by episode id) under
    ``outdir/replays/<game>.html``; returns {game: path relative to outdir}."""
    from .replay import write_record_replay
    first: dict = {}
    for record in sorted(records, key=lambda r: str(r.get("episode_id"))):
        first.setdefault(record.get("game"), record)
    pages = {}
    for game in sorted(first, key=str):
        name = f"replays/{game}.html"
        write_record_replay(first[game], outdir / name)
        pages[game] = name
    return pages


def write_html(summary: dict, path: Path, images: dict, notes: list) -> None:
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Social Gym leaderboard</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
             "text-align:right}th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}"
             "img{max-width:100%}</style></head><body>",
             "<h1>Social Gym leaderboard</h1>",
             f"<p>{summary['episodes']} episodes; Bradley–Terry Elo (C={summary['settings']['C']}, mean 1000), "
             f"{html.escape(interval_note(summary['settings']))}.</p>"]
    parts += [f"<p>{'<br>'.join(html.escape(line) for line in n.splitlines())}</p>" for n in notes]
    replays = summary.get("replays") or {}
    if replays:
        parts.append("<h2>Replays</h2><p>One episode of each game: "
                     + " · ".join(f"<a href='{html.escape(page)}'>{html.escape(game)}</a>"
                                  for game, page in replays.items()) + "</p>")
    for name, data in images.items():
        parts.append(f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' "
                     f"src='data:image/png;base64,{base64.b64encode(data).decode()}'>")
    for title, header, rows in (table.page_cells(summary) for table in _page_tables(summary)):
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(str(h))}</th>" for h in header) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    atomic_write_text(path, "\n".join(parts))


def build_leaderboard(logdir, outdir, n_boot: int = bt.N_BOOTSTRAP, by: str = "episode", seed: int = 0,
                      compare: str = "reward", ties: str = "exclude", interval: str = "profile",
                      prices: Optional[dict] = None) -> dict:
    """Rebuild every leaderboard file in ``outdir`` from the logs under ``logdir``; return the
    summary (also written as ``leaderboard.json``)."""
    outdir = Path(outdir)
    records, skipped = load_records(logdir)
    timing = read_timing(logdir)
    if not records:
        raise LogFormatError(f"no usable episode records in {logdir}. {skipped_note(skipped)}".strip())
    unknown = sorted({str(r.get("game")) for r in records} - set(game_ids()))
    if unknown:                        # rated and drawn without its rules: a silent wrong board
        raise UnknownGameError(f"{logdir} holds episodes of games not registered here: {', '.join(unknown)} "
                               f"(--game-module PKG.MOD registers an outside game; valid: {', '.join(sorted(game_ids()))})")
    summary = summarize(records, n_boot=n_boot, by=by, seed=seed, compare=compare, ties=ties, interval=interval,
                        prices=prices, timing=timing)
    outdir.mkdir(parents=True, exist_ok=True)        # only once the input proved good
    summary["skipped"] = skipped
    summary["logdir"] = str(logdir)
    # Each file is written atomically; leaderboard.json, which lists them, goes first and comes
    # back last, so a rebuild killed half-way leaves no leaderboard.json, never one that
    # describes files of another build.
    (outdir / "leaderboard.json").unlink(missing_ok=True)
    # the figures name policies by their short names; the tables by their whole specs
    notes = [note for note in (skipped_note(skipped),
                               names_note(short_names(summary["policies"]), "The figures show shorter names:"),
                               some_games_note(summary)) if note]
    summary["replays"] = write_game_replays(records, outdir)
    files = write_csvs(summary, outdir)
    plot_elo_heatmap(summary, outdir / "elo_heatmap.png")
    plot_role_gap(summary, outdir / "role_gap.png")
    write_markdown(summary, outdir / "leaderboard.md", notes)
    images = {"Per-game and overall Elo": (outdir / "elo_heatmap.png").read_bytes(),
              "Role gap": (outdir / "role_gap.png").read_bytes()}
    write_html(summary, outdir / "leaderboard.html", images, notes)
    files.update((name, str(outdir / name))
                 for name in ("elo_heatmap.png", "role_gap.png", "leaderboard.md", "leaderboard.html", "leaderboard.json"))
    summary["files"] = files
    atomic_write_text(outdir / "leaderboard.json", json.dumps(summary, indent=1, default=_json_default))
    return summary


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value)}")


def print_leaderboard(summary: dict, console=None) -> None:
    """The overall table, the per-game Elo, what was separated and the decisions, as rich tables;
    policies by their short names (socialgym_agents.specs.short_names), their whole specs said under
    the first table."""
    from rich.console import Console

    console = console or Console()
    names = short_names(summary["policies"])

    def say(text: str) -> None:
        if text:
            console.print(text, markup=False, highlight=False)
    console.print(_console_table(OVERALL, summary, names))
    say(names_note(names))
    say(some_games_note(summary, names))
    unrated = [names[p] for p in summary["policies"] if summary["overall"][p]["elo"] is None]
    if unrated:
        why = ("a rating compares policies, and these logs hold one" if len(summary["policies"]) < 2 else
               "no game between two different policies ended with a winner (all draws, which "
               "--ties exclude leaves out, or no games between them)")
        say(f"Elo is empty for {', '.join(unrated)}: {why}.")
    if summary["competitive_games"]:
        console.print(_per_game_console_table(summary, names))
    say(separation_note(summary["separated"], names))
    say(role_gap_note(summary, names))
    console.print(_console_table(DECISIONS, summary, names))
    say(skipped_note(summary.get("skipped") or {}))


NAME_WIDTH = 30     # the narrowest a console column of policy names gets before the numbers' give way


def _cell(text: str):
    """A name as literal text: ``smollm2 [mode=score]`` is not rich markup."""
    from rich.text import Text
    return Text(text)


def _console_table(table: Table, summary: dict, names: dict):
    """A declared table in the console: the columns with a console header, policies by short name."""
    from rich.table import Table as RichTable
    shown = [column for column in table.columns if column.console is not None]
    out = RichTable(title=_heading(table.console_title, summary))
    for column in shown:
        if column.policy:                # a name folds, never cut; NAME_WIDTH a line before the numbers give way
            out.add_column(column.console, justify="left", overflow="fold",
                           min_width=min(NAME_WIDTH, max((len(name) for name in names.values()), default=6)))
        else:
            out.add_column(column.console, justify="right")
    for row in table.rows(summary):
        texts = [column.text(row) for column in shown]
        out.add_row(*(_cell(names.get(text, text)) if column.policy else str(text) for column, text in zip(shown, texts)))
    return out


def _per_game_console_table(summary: dict, names: dict):
    from rich.table import Table
    per_game = Table(title="Per-game Elo")
    per_game.add_column("game")
    for p in summary["policies"]:        # a narrow column folds its name, never cuts it
        per_game.add_column(_cell(names[p]), justify="right", overflow="fold")
    per_game.add_column("share of battles", justify="right")
    share = summary["game_weighted"]["battle_share"]
    for g in summary["competitive_games"]:
        per_game.add_row(g, *(_fmt(summary["per_game"][g].get(p, {}).get("elo")) for p in summary["policies"]),
                         _pct(share.get(g)))
    for g, t in summary["cooperative"].items():
        per_game.add_row(f"{g} (coop, win %)", *(_pct(t.get(p, {}).get("rate")) for p in summary["policies"]), "")
    return per_game
