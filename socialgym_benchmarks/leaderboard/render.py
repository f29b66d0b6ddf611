"""The leaderboard's files, rebuilt from episode logs alone (the numbers: :mod:`socialgym_benchmarks.leaderboard.summary`).

``build_leaderboard(logdir, outdir)`` reads every ``*.jsonl`` under ``logdir``
(``socialgym_env.logs.iter_log_dir``), skips failed and unfinished records (counted), and writes
to ``outdir`` a CSV per table declared in :mod:`socialgym_benchmarks.leaderboard.tables` (``Table.file``), ``leaderboard.json`` (the summary
it returns, with ``online_elo``: the released code's online Elo), ``leaderboard.md`` and a
self-contained ``leaderboard.html``, the figures ``elo_heatmap.png`` (paper Figure 2) and
``role_gap.png`` (paper Table 6). What each file holds: docs/tournament.md, "Outputs".
"""
from __future__ import annotations

import base64
import csv
import html
import json
from pathlib import Path
from typing import Optional

import numpy as np

from socialgym_agents.specs import short_names
from socialgym_env.atomic import atomic_file, atomic_write_text
from socialgym_env.errors import LogFormatError, UnknownGameError
from socialgym_env.journal import read_timing
from socialgym_env.registry import game_ids

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.markup import md_cell, md_text
from socialgym_benchmarks.ratings import load_records, skipped_note

from .plots import plot_elo_heatmap, plot_role_gap
from .summary import summarize
from . import tables
from .tables import Table, file_tables, gap_status, heading, number, page_tables, percent


def write_csvs(summary: dict, outdir: Path) -> dict:
    """Each declared table that has a file (``Table.file``) as CSV in ``outdir``; returns {file: path}."""
    files = {}
    for table in file_tables():
        path = outdir / table.file
        with atomic_file(path, "w", newline="") as handle:
            csv.writer(handle).writerows(table.file_cells(summary))
        files[table.file] = str(path)
    return files


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
    for note in notes:                # each its own paragraph, its lines kept (hard breaks); names are text
        lines += [md_text(note).replace("\n", "  \n"), ""]
    for title, header, rows in (table.page_cells(summary) for table in page_tables(summary)):
        lines += [f"## {md_text(title)}", "", "| " + " | ".join(map(md_cell, header)) + " |",
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


# The page fits a 1,280-px window: policies go by their short names (a legend gives each whole
# spec, which breaks anywhere), a long cell wraps instead of widening its table, and the figures
# scale down (tests/benchmarks/test_leaderboard_browser.py measures it in Chromium).
HTML_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}p{overflow-wrap:anywhere}"
              "table{border-collapse:collapse;margin:1em 0;font-size:14px}"
              "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}"
              "th{background:#f0f0f0;white-space:normal}td:first-child,th:first-child,.name{text-align:left}"
              ".name{white-space:normal;overflow-wrap:anywhere;min-width:16em}"
              "table.legend td,table.legend th{text-align:left;white-space:normal}"
              "table.legend td:last-child{font-family:monospace;word-break:break-all}"
              "img{max-width:100%;height:auto}")
# the columns whose cells are names (policies, games), which wrap and read left to right
NAME_HEADERS = {"policy", "higher", "lower", "game"}


TURN_ABOVE = 10      # columns: a policy-by-group table wider than this and than it is long is shown turned


def turned_if_wide(header: list, rows: list) -> tuple[list, list]:
    """A table of a row per policy and a column per group (e.g. 21 games; ``Table.by_group``) wider
    than TURN_ABOVE columns and than it is long, turned on the page: a row per group, a column per
    policy, so that it fits the width however many groups there are."""
    if not (len(header) > TURN_ABOVE and len(header) > len(rows) + 1):
        return header, rows
    return ["", *(row[0] for row in rows)], [[h, *(row[k] for row in rows)] for k, h in enumerate(header) if k]


def html_legend(names: dict) -> str:
    """The table of every policy shown by a shorter name and its whole spec ('' if none is)."""
    longer = [(name, spec) for spec, name in names.items() if name != spec]
    if not longer:
        return ""
    return ("<h2>Policy names</h2><p>The tables and figures show shorter names; each stands for this spec:</p>"
            "<table class='legend'><tr><th>name</th><th>spec</th></tr>"
            + "".join(f"<tr><td>{html.escape(name)}</td><td>{html.escape(spec)}</td></tr>" for name, spec in longer)
            + "</table>")


def write_html(summary: dict, path: Path, images: dict, notes: list, names: Optional[dict] = None) -> None:
    """The page; ``names``: policy -> the name its cells show (None: the whole specs)."""
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width, initial-scale=1'><title>Social Gym leaderboard</title>",
             f"<style>{HTML_STYLE}</style></head><body>",
             "<h1>Social Gym leaderboard</h1>",
             f"<p>{summary['episodes']} episodes; Bradley–Terry Elo (C={summary['settings']['C']}, mean 1000), "
             f"{html.escape(interval_note(summary['settings']))}.</p>"]
    parts += [f"<p>{'<br>'.join(html.escape(line) for line in n.splitlines())}</p>" for n in notes]
    parts.append(html_legend(names or {}))
    replays = summary.get("replays") or {}
    if replays:
        parts.append("<h2>Replays</h2><p>One episode of each game: "
                     + " · ".join(f"<a href='{html.escape(page)}'>{html.escape(game)}</a>"
                                  for game, page in replays.items()) + "</p>")
    for name, data in images.items():
        parts.append(f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' "
                     f"src='data:image/png;base64,{base64.b64encode(data).decode()}'>")
    for table in page_tables(summary):
        title, header, rows = table.page_cells(summary, names)
        if table.by_group:
            header, rows = turned_if_wide(header, rows)
        classes = ["" if h not in NAME_HEADERS else " class='name'" for h in header]
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr>"
                     + "".join(f"<th{k}>{html.escape(str(h))}</th>" for h, k in zip(header, classes)) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td{k}>{html.escape(str(c))}</td>" for c, k in zip(r, classes)) + "</tr>")
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
    # the figures name policies by their short names; the Markdown tables by their whole specs, the
    # HTML page's by the short names, with a legend
    names = short_names(summary["policies"])
    notes = [note for note in (skipped_note(skipped), names_note(names, "The figures show shorter names:"),
                               some_games_note(summary)) if note]
    html_notes = [note for note in (skipped_note(skipped), some_games_note(summary, names)) if note]
    summary["replays"] = write_game_replays(records, outdir)
    files = write_csvs(summary, outdir)
    plot_elo_heatmap(summary, outdir / "elo_heatmap.png")
    plot_role_gap(summary, outdir / "role_gap.png")
    write_markdown(summary, outdir / "leaderboard.md", notes)
    images = {"Per-game and overall Elo": (outdir / "elo_heatmap.png").read_bytes(),
              "Role gap": (outdir / "role_gap.png").read_bytes()}
    write_html(summary, outdir / "leaderboard.html", images, html_notes, names)
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
    from socialgym_env.console import OutputConsole

    console = console or OutputConsole()
    names = short_names(summary["policies"])

    def say(text: str) -> None:
        if text:
            console.print(text, markup=False, highlight=False)
    console.print(_console_table(tables.OVERALL, summary, names))
    for apart in tables.apart_tables(summary):
        console.print(_console_table(apart, summary, names))
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
    console.print(_console_table(tables.DECISIONS, summary, names))
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
    out = RichTable(title=heading(table.console_title, summary))
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
        per_game.add_row(g, *(number(summary["per_game"][g].get(p, {}).get("elo")) for p in summary["policies"]),
                         percent(share.get(g)))
    for g, t in summary["cooperative"].items():
        per_game.add_row(f"{g} (coop, win %)", *(percent(t.get(p, {}).get("rate")) for p in summary["policies"]), "")
    return per_game
