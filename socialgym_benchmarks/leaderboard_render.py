"""The leaderboard's files, rebuilt from episode logs alone (the numbers: :mod:`socialgym_benchmarks.leaderboard`).

``build_leaderboard(logdir, outdir)`` reads every ``*.jsonl`` under ``logdir``
(``socialgym_env.logs.iter_log_dir``), skips failed and unfinished records (counted), and
writes to ``outdir``:

| file                 | what it holds                                                          |
|----------------------|------------------------------------------------------------------------|
| ``leaderboard.csv``  | overall Elo over the competitive games, 95% CI, win rate (Wilson CI)   |
| ``per_game_elo.csv`` | per-game Elo and CI of every policy (competitive games)                |
| ``win_rates.csv``    | per game and policy: seats, wins, draws, losses, win rate, Wilson CI   |
| ``cooperative.csv``  | cooperative games: win rate and mean ``metrics.coordination``          |
| ``profiles.csv``     | capability profiles: Elo refit per category, skill tag, information,   |
|                      | communication, player count and horizon group (paper Appendix C)       |
| ``role_elo.csv``     | hidden-role games: Elo-Main, Elo-Alt, the gap Alt − Main (App. I) and  |
|                      | ``gap_identified`` (False: the data cannot tell this policy's gap; see |
|                      | :mod:`socialgym_benchmarks.leaderboard`)                                         |
| ``leaderboard.json`` | all of the above in one object (the summary ``build_leaderboard`` returns), |
|                      | plus ``online_elo``: the released code's online Elo (K = 32), overall   |
|                      | and per game                                                           |
| ``leaderboard.md``   | Markdown tables                                                        |
| ``leaderboard.html`` | one self-contained page: the tables and both figures inlined           |
| ``elo_heatmap.png``  | per-game Elo heatmap + overall Elo with CI bars (paper Figure 2)       |
| ``role_gap.png``     | Elo-Alt − Elo-Main per policy × hidden-role game (paper Table 6)       |

"""
from __future__ import annotations

import base64
import csv
import html
import json
import math
import textwrap
import warnings
from pathlib import Path

import numpy as np

from socialgym_env.atomic import atomic_file, atomic_savefig, atomic_write_text
from socialgym_env.errors import LogFormatError, UnknownGameError
from socialgym_env.registry import game_ids

from . import elo as bt
from .leaderboard import AXES, load_records, skipped_note, summarize


# ----------------------------------------------------------------------------- files
def _fmt(value, digits=0):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{digits}f}"


def _pct(value):
    return "" if value is None else f"{100 * value:.1f}%"


def write_csvs(summary: dict, outdir: Path) -> dict:
    files = {}

    def write(name, header, rows):
        path = outdir / name
        with atomic_file(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        files[name] = str(path)

    write("leaderboard.csv", ["rank", "policy", "elo", "elo_lo", "elo_hi", "battles", "win_rate", "win_lo",
                              "win_hi", "seats", "wins", "episodes"],
          [[i + 1, p, *(summary["overall"][p].get(k) for k in ("elo", "lo", "hi", "battles", "win_rate", "win_lo",
                                                                  "win_hi", "seats", "wins", "episodes"))]
           for i, p in enumerate(summary["policies"])])
    write("per_game_elo.csv", ["game", "category", "policy", "elo", "elo_lo", "elo_hi", "battles"],
          [[g, summary["game_info"][g]["category"], p, v["elo"], v["lo"], v["hi"], v["battles"]]
           for g, table in summary["per_game"].items() for p, v in table.items()])
    write("win_rates.csv", ["game", "policy", "seats", "wins", "draws", "losses", "win_rate", "win_lo", "win_hi"],
          [[g, p, v["seats"], v["wins"], v["draws"], v["losses"], v["rate"], v["lo"], v["hi"]]
           for g, table in summary["win_rates"].items() for p, v in sorted(table.items())])
    write("cooperative.csv", ["game", "policy", "seats", "wins", "win_rate", "win_lo", "win_hi", "coordination",
                              "coordination_episodes"],
          [[g, p, v["seats"], v["wins"], v["rate"], v["lo"], v["hi"], v["coordination"], v["coordination_episodes"]]
           for g, table in summary["cooperative"].items() for p, v in sorted(table.items())])
    write("profiles.csv", ["axis", "group", "policy", "elo", "elo_lo", "elo_hi", "battles"],
          [[axis, group, p, v["elo"], v["lo"], v["hi"], v["battles"]]
           for axis, groups in summary["profiles"].items() for group, table in groups.items()
           for p, v in table.items()])
    role_cols = ["elo_main", "main_lo", "main_hi", "elo_alt", "alt_lo", "alt_hi", "gap", "gap_identified"]
    write("role_elo.csv", ["game", "policy", *role_cols],
          [[g, p, *(v.get(c) for c in role_cols)] for g, table in
           list(summary["roles"].items()) + [("ALL_HIDDEN_ROLE", summary.get("roles_overall", {}))]
           for p, v in sorted(table.items())])
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
        ax.set_yticklabels(policies, fontsize=8)
    else:
        ax.text(0.5, 0.5, "no competitive games", ha="center", va="center")
        ax.set_axis_off()
    ax.set_title("Per-game Elo")
    ys = np.arange(len(policies))
    elos = [summary["overall"][p]["elo"] for p in policies]
    ok = [i for i, e in enumerate(elos) if e is not None]
    if ok:
        e = np.array([elos[i] for i in ok])
        lo = np.array([_or(summary["overall"][policies[i]]["lo"], v) for i, v in zip(ok, e)])
        hi = np.array([_or(summary["overall"][policies[i]]["hi"], v) for i, v in zip(ok, e)])
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
        unidentified = np.zeros(m.shape, dtype=bool)
        for j, g in enumerate(games):
            for i, p in enumerate(policies):
                row = summary["roles"][g].get(p, {})
                if row.get("gap") is not None:
                    m[i, j] = row["gap"]
                    unidentified[i, j] = not row.get("gap_identified")
        unidentified[:, -1] = unidentified[:, :-1].any(axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m[:, -1] = np.nanmean(m[:, :-1], axis=1)
        span = max(50.0, float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 50.0)
        ax.imshow(m, cmap="PuOr", vmin=-span, vmax=span, aspect="auto")
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                if np.isfinite(m[i, j]):
                    mark = "\nnot id." if unidentified[i, j] else ""
                    ax.text(j, i, f"{m[i, j]:+.0f}{mark}", ha="center", va="center", fontsize=7)
        ax.axvline(len(games) - 0.5, color="black", linewidth=1.5)
        ax.set_xticks(range(len(games) + 1))
        ax.set_xticklabels([summary["game_info"][g].get("name") or g for g in games] + ["Mean"],
                           rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(policies)))
        ax.set_yticklabels(policies, fontsize=8)
    # Wrapped to the figure's width (one line was clipped on narrow figures).
    title = "Role gap: Elo-Alt − Elo-Main\n(positive = minority/deceptive side stronger)"
    if games and unidentified.any():
        title += "\nnot id. = the data cannot tell this policy's gap (e.g. two policies: only their mean gap)"
    width = int(13 * fig_w)         # characters of 8-pt text per line of the figure's width
    ax.set_title("\n".join(textwrap.fill(line, width) for line in title.split("\n")), fontsize=8)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=120)
    plt.close(fig)


def _gap(row: dict) -> str:
    if row.get("gap") is None:
        return ""
    return f"{row['gap']:+.0f}" + ("" if row.get("gap_identified") else " (n.i.)")


def _tables(summary: dict) -> list[tuple[str, list, list]]:
    """(title, header, rows) of every table, shared by Markdown and HTML."""
    out = []
    rows = []
    for i, p in enumerate(summary["policies"]):
        v = summary["overall"][p]
        ci = f"[{_fmt(v['lo'])}, {_fmt(v['hi'])}]" if v["elo"] is not None else ""
        wci = f"[{_pct(v['win_lo'])}, {_pct(v['win_hi'])}]" if v["win_rate"] is not None else ""
        rows.append([i + 1, p, _fmt(v["elo"]), ci, _pct(v["win_rate"]), wci, v["episodes"], v["battles"]])
    out.append(("Overall (competitive games)", ["#", "policy", "Elo", "95% CI", "win rate", "Wilson 95% CI",
                                                 "episodes", "pairwise outcomes"], rows))
    games = summary["competitive_games"]
    if games:
        rows = [[p] + [_fmt(summary["per_game"][g].get(p, {}).get("elo")) for g in games] for p in summary["policies"]]
        out.append(("Per-game Elo", ["policy"] + games, rows))
    if summary["cooperative"]:
        rows = []
        for g, table in summary["cooperative"].items():
            for p in summary["policies"]:
                if p in table:
                    v = table[p]
                    rows.append([g, p, _pct(v["rate"]), f"[{_pct(v['lo'])}, {_pct(v['hi'])}]",
                                 _fmt(v["coordination"], 2), v["seats"]])
        out.append(("Cooperative games", ["game", "policy", "win rate", "Wilson 95% CI", "coordination", "seats"], rows))
    if summary["roles"]:
        hidden = list(summary["roles"])
        rows = []
        for p in summary["policies"]:
            cells = [summary["roles"][g].get(p, {}) for g in hidden]
            known = [c["gap"] for c in cells if c.get("gap") is not None]
            rows.append([p] + [_gap(c) for c in cells] + [f"{np.mean(known):+.0f}" if known else ""])
        out.append(("Role gap Elo-Alt − Elo-Main (hidden-role games; n.i. = not identified by these data)",
                    ["policy"] + hidden + ["mean"], rows))
        rows = []
        for g in hidden + ["ALL"]:
            table = summary["roles"][g] if g != "ALL" else summary.get("roles_overall", {})
            for p in summary["policies"]:
                v = table.get(p)
                if v:
                    rows.append([g, p, _fmt(v.get("elo_main")), _fmt(v.get("elo_alt")), _gap(v)])
        out.append(("Elo-Main / Elo-Alt", ["game", "policy", "Elo-Main", "Elo-Alt", "gap"], rows))
    for axis in AXES:
        groups = summary["profiles"].get(axis, {})
        if groups:
            names = list(groups)
            rows = [[p] + [_fmt(groups[g].get(p, {}).get("elo")) for g in names] for p in summary["policies"]]
            out.append((f"Profile by {axis}", ["policy"] + names, rows))
    return out


def _or(value, default):
    return default if value is None else value


def md_cell(value) -> str:
    """A table cell safe in Markdown: no column break, no raw HTML, one line."""
    return (str(value).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\n", " "))


def write_markdown(summary: dict, path: Path, notes: list) -> None:
    lines = ["# Social Gym leaderboard", "",
             f"{summary['episodes']} episodes; Bradley–Terry Elo (C={summary['settings']['C']}, mean 1000), "
             f"95% bootstrap CIs ({summary['settings']['bootstrap']} resamples by {summary['settings']['bootstrap_by']}).",
             *notes, ""]
    for title, header, rows in _tables(summary):
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
             f"95% bootstrap CIs ({summary['settings']['bootstrap']} resamples by "
             f"{html.escape(summary['settings']['bootstrap_by'])}).</p>"]
    parts += [f"<p>{html.escape(n)}</p>" for n in notes]
    replays = summary.get("replays") or {}
    if replays:
        parts.append("<h2>Replays</h2><p>One episode of each game: "
                     + " · ".join(f"<a href='{html.escape(page)}'>{html.escape(game)}</a>"
                                  for game, page in replays.items()) + "</p>")
    for name, data in images.items():
        parts.append(f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' "
                     f"src='data:image/png;base64,{base64.b64encode(data).decode()}'>")
    for title, header, rows in _tables(summary):
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(str(h))}</th>" for h in header) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    atomic_write_text(path, "\n".join(parts))


def build_leaderboard(logdir, outdir, n_boot: int = bt.N_BOOTSTRAP, by: str = "episode", seed: int = 0,
                      compare: str = "reward", ties: str = "exclude") -> dict:
    """Rebuild every leaderboard file in ``outdir`` from the logs under ``logdir``; return the
    summary (also written as ``leaderboard.json``)."""
    outdir = Path(outdir)
    records, skipped = load_records(logdir)
    if not records:
        raise LogFormatError(f"no usable episode records in {logdir}. {skipped_note(skipped)}".strip())
    unknown = sorted({str(r.get("game")) for r in records} - set(game_ids()))
    if unknown:                        # rated and drawn without its rules: a silent wrong board
        raise UnknownGameError(f"{logdir} holds episodes of games not registered here: {', '.join(unknown)} "
                               f"(--game-module PKG.MOD registers an outside game; valid: {', '.join(sorted(game_ids()))})")
    summary = summarize(records, n_boot=n_boot, by=by, seed=seed, compare=compare, ties=ties)
    outdir.mkdir(parents=True, exist_ok=True)        # only once the input proved good
    summary["skipped"] = skipped
    summary["logdir"] = str(logdir)
    # Each file is written atomically; leaderboard.json, which lists them, goes first and comes
    # back last, so a rebuild killed half-way leaves no leaderboard.json, never one that
    # describes files of another build.
    (outdir / "leaderboard.json").unlink(missing_ok=True)
    notes = [note] if (note := skipped_note(skipped)) else []
    summary["replays"] = write_game_replays(records, outdir)
    files = write_csvs(summary, outdir)
    plot_elo_heatmap(summary, outdir / "elo_heatmap.png")
    plot_role_gap(summary, outdir / "role_gap.png")
    files["elo_heatmap.png"] = str(outdir / "elo_heatmap.png")
    files["role_gap.png"] = str(outdir / "role_gap.png")
    write_markdown(summary, outdir / "leaderboard.md", notes)
    images = {"Per-game and overall Elo": (outdir / "elo_heatmap.png").read_bytes(),
              "Role gap": (outdir / "role_gap.png").read_bytes()}
    write_html(summary, outdir / "leaderboard.html", images, notes)
    files["leaderboard.md"] = str(outdir / "leaderboard.md")
    files["leaderboard.html"] = str(outdir / "leaderboard.html")
    files["leaderboard.json"] = str(outdir / "leaderboard.json")
    summary["files"] = files
    atomic_write_text(outdir / "leaderboard.json", json.dumps(summary, indent=1, default=_json_default))
    return summary


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    raise TypeError(f"not JSON serializable: {type(value)}")


def print_leaderboard(summary: dict, console=None) -> None:
    """The overall table (and the per-game Elo) as rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"Social Gym leaderboard — {summary['episodes']} episodes, "
                        f"{len(summary['competitive_games'])} competitive games")
    for col in ("#", "policy", "Elo", "95% CI", "win rate", "episodes"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for i, p in enumerate(summary["policies"]):
        v = summary["overall"][p]
        ci = f"[{_fmt(v['lo'])}, {_fmt(v['hi'])}]" if v["elo"] is not None else ""
        table.add_row(str(i + 1), p, _fmt(v["elo"]), ci, _pct(v["win_rate"]), str(v["episodes"]))
    console.print(table)
    unrated = [p for p in summary["policies"] if summary["overall"][p]["elo"] is None]
    if unrated:
        why = ("a rating compares policies, and these logs hold one" if len(summary["policies"]) < 2 else
               "no game between two different policies ended with a winner (all draws, which "
               "--ties exclude leaves out, or no games between them)")
        console.print(f"Elo is empty for {', '.join(unrated)}: {why}.", markup=False, highlight=False)
    games = summary["competitive_games"]
    if games:
        per_game = Table(title="Per-game Elo")
        per_game.add_column("game")
        for p in summary["policies"]:
            per_game.add_column(p, justify="right")
        for g in games:
            per_game.add_row(g, *(_fmt(summary["per_game"][g].get(p, {}).get("elo")) for p in summary["policies"]))
        for g, t in summary["cooperative"].items():
            per_game.add_row(f"{g} (coop, win %)", *(_pct(t.get(p, {}).get("rate")) for p in summary["policies"]))
        console.print(per_game)
    note = skipped_note(summary.get("skipped") or {})
    if note:
        console.print(note, markup=False, highlight=False)
