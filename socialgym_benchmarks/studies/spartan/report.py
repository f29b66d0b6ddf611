"""Tables and figures of a protocol run: ``RUN/<protocol>.csv`` (one row per condition),
``RUN/<protocol>.json`` (rows, stop-rule decisions, playbook metadata, config), ``RUN/<protocol>.md``
(the paper-shaped summary, then every row) and ``RUN/<protocol>.png``."""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Optional

from socialgym_env.atomic import atomic_file, atomic_savefig, atomic_write_text

from socialgym_benchmarks.markup import md_cell, md_text

COLUMNS = ("game", "side", "condition", "round", "source", "held_out", "student", "armed_model",
           "opponent_model", "playbook_id", "wins", "n", "win_rate", "ci_low", "ci_high", "ci_method",
           "baseline_win_rate", "delta_points", "delta_ci_low", "delta_ci_high", "delta_ci_method",
           "p_value", "test", "pairs", "significant", "failed", "consecutive_jaccard", "copy_share", "utterances")
# What every table's cells mean, with the name of each test and interval.
CELL_LEGEND = ("Cells: armed-side win % [Wilson 95% CI] (Δ points vs the no-playbook baseline on the same seeds; "
               "* = exact McNemar p < 0.05, paired by seed (its sign-flip generalisation where seats are pooled); "
               "the CSV/JSON also give the Δ's paired-bootstrap 95% interval over seeds). "
               "Symmetric games pool their seats (side `pooled`).")


def _pct(x: Optional[float]) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.0f}"


def _delta(row: dict) -> str:
    if row.get("delta_points") is None or math.isnan(row["delta_points"]):
        return ""
    star = "*" if row.get("significant") else ""
    return f" ({row['delta_points']:+.0f}{star})"


def cell(row: Optional[dict]) -> str:
    """``win% [lo-hi] (delta*)``; * = the paired test against the baseline has p < 0.05."""
    if row is None:
        return ""
    return f"{_pct(row['win_rate'])} [{_pct(row['ci_low'])}–{_pct(row['ci_high'])}]{_delta(row)}"


def markdown_table(header: list, rows: list[list]) -> str:
    """Cells as text (md_cell): model, game and playbook names come from configs and logs."""
    lines = ["| " + " | ".join(map(md_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _find(rows, **match) -> Optional[dict]:
    for row in rows:
        if all(row.get(k) == v for k, v in match.items()):
            return row
    return None


def _sides(rows) -> list:
    return list(dict.fromkeys((r["game"], r["side"]) for r in rows))


# ----------------------------------------------------------------------------- summaries
def summary_within(rows) -> str:
    rounds = sorted({r["round"] for r in rows if r.get("round")})
    header = ["game", "side", "BL"] + [c for t in rounds for c in (f"+R{t}", f"placebo R{t}")]
    body = []
    for game, side in _sides(rows):
        line = [game, side, cell(_find(rows, game=game, side=side, condition="baseline"))]
        for t in rounds:
            line += [cell(_find(rows, game=game, side=side, condition="playbook", round=t)),
                     cell(_find(rows, game=game, side=side, condition="placebo", round=t))]
        body.append(line)
    return markdown_table(header, body)


def summary_cross(rows) -> str:
    sources = list(dict.fromkeys(r["source"] for r in rows if r.get("source")))
    targets = list(dict.fromkeys(r["game"] for r in rows))
    body = []
    for source in sources:
        line = [source]
        for target in targets:
            parts = []
            for side_row in [r for r in rows if r["game"] == target and r.get("source") == source
                             and r["condition"] == "playbook"]:
                placebo = _find(rows, game=target, side=side_row["side"], source=source, condition="placebo")
                parts.append(f"{side_row['side']} {side_row['delta_points']:+.0f}"
                             + ("*" if side_row["significant"] else "")
                             + (f" (pl {placebo['delta_points']:+.0f})" if placebo else ""))
            line.append("; ".join(parts) if parts else "—")
        body.append(line)
    return markdown_table(["source \\ target"] + targets, body)


def summary_multigame(rows) -> str:
    body = []
    for row in rows:
        if row["condition"] != "playbook":
            continue
        placebo = _find(rows, game=row["game"], side=row["side"], source=row["source"], condition="placebo")
        body.append([row["source"], row["game"], "" if row.get("held_out") is None else ("held-out" if row["held_out"] else "in-dist"),
                     row["side"], cell(_find(rows, game=row["game"], side=row["side"], condition="baseline")),
                     cell(row), cell(placebo)])
    return markdown_table(["source", "target", "split", "side", "BL", "+R", "placebo"], body)


def summary_distill(rows) -> str:
    body = []
    for row in rows:
        if row["condition"] != "playbook":
            continue
        base = _find(rows, game=row["game"], side=row["side"], armed_model=row["armed_model"], condition="baseline")
        placebo = _find(rows, game=row["game"], side=row["side"], armed_model=row["armed_model"], condition="placebo")
        body.append([row["student"], row["teacher"], row["game"], row["side"], cell(base), cell(row), cell(placebo)])
    return markdown_table(["student", "teacher", "game", "side", "BL", "+R", "placebo"], body)


SUMMARIES = {"within": summary_within, "cross": summary_cross, "multigame": summary_multigame,
             "distill": summary_distill, "evaluate": summary_distill}


def all_rows_table(rows) -> str:
    cols = ["game", "side", "condition", "round", "source", "student", "playbook_id", "wins", "n",
            "win_rate", "ci_low", "ci_high", "delta_points", "delta_ci_low", "delta_ci_high", "p_value", "test",
            "pairs", "consecutive_jaccard", "copy_share"]
    cols = [c for c in cols if any(r.get(c) is not None for r in rows)]
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else v   # noqa: E731
    return markdown_table(cols, [[fmt(r.get(c)) for c in cols] for r in rows])


# ----------------------------------------------------------------------------- figures
def _errorbar(ax, x, row, **kw):
    if row is None or not row["n"]:
        return
    p = 100 * row["win_rate"]
    ax.errorbar([x], [p], yerr=_yerr(row), capsize=3, **kw)


def _yerr(row) -> list:
    p = 100 * row["win_rate"]
    return [[max(0.0, p - 100 * row["ci_low"])], [max(0.0, 100 * row["ci_high"] - p)]]


def figure_within(rows, path):
    import matplotlib.pyplot as plt
    games = list(dict.fromkeys(r["game"] for r in rows))
    fig, axes = plt.subplots(1, len(games), figsize=(4.5 * len(games), 3.5), squeeze=False)
    for ax, game in zip(axes[0], games):
        rounds = sorted({r["round"] for r in rows if r["game"] == game})
        for i, side in enumerate(dict.fromkeys(r["side"] for r in rows if r["game"] == game)):
            color = f"C{i}"
            points = [_find(rows, game=game, side=side, condition="baseline")] + \
                     [_find(rows, game=game, side=side, condition="playbook", round=t) for t in rounds if t]
            xs = [0] + [t for t in rounds if t]
            ax.plot(xs, [100 * p["win_rate"] if p and p["n"] else float("nan") for p in points], "-o", color=color, label=side)
            for x, p in zip(xs, points):
                _errorbar(ax, x, p, color=color)
            for t in rounds:
                _errorbar(ax, t + 0.1, _find(rows, game=game, side=side, condition="placebo", round=t),
                          color=color, marker="x", linestyle="none")
        ax.set_title(game)
        ax.set_xlabel("reflection round (0 = baseline; x = placebo)")
        ax.set_ylabel("armed-side win %")
        ax.set_ylim(-5, 105)
        ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)


def figure_cross(rows, path):
    import matplotlib.pyplot as plt
    import numpy as np
    sources = list(dict.fromkeys(r["source"] for r in rows if r.get("source")))
    targets = list(dict.fromkeys(r["game"] for r in rows))
    sides = list(dict.fromkeys(r["side"] for r in rows))
    fig, axes = plt.subplots(1, len(sides), figsize=(1.2 * len(targets) * len(sides) + 3, 0.6 * len(sources) + 2.5), squeeze=False)
    for ax, side in zip(axes[0], sides):
        grid = np.full((len(sources), len(targets)), np.nan)
        for i, s in enumerate(sources):
            for j, t in enumerate(targets):
                row = _find(rows, game=t, side=side, source=s, condition="playbook")
                if row and row["delta_points"] is not None:
                    grid[i, j] = row["delta_points"]
        image = ax.imshow(grid, cmap="RdBu", vmin=-50, vmax=50)
        for i in range(len(sources)):
            for j in range(len(targets)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:+.0f}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(targets)), targets, rotation=45, ha="right")
        ax.set_yticks(range(len(sources)), sources)
        ax.set_title(f"R on the {side} side (Δ points vs baseline)")
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)


def _bars(rows, groups, label_of, path, title):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 3.5), squeeze=False)
    for ax, (name, group) in zip(axes[0], groups.items()):
        sides = list(dict.fromkeys(r["side"] for r in group))
        conditions = list(dict.fromkeys(label_of(r) for r in group))
        width = 0.8 / max(1, len(sides))
        for k, side in enumerate(sides):
            for x, cond in enumerate(conditions):
                row = next((r for r in group if r["side"] == side and label_of(r) == cond), None)
                if row and row["n"]:
                    p = 100 * row["win_rate"]
                    ax.bar(x + k * width, p, width, color=f"C{k}", label=side if x == 0 else None,
                           yerr=_yerr(row), capsize=2)
        ax.set_xticks([x + width * (len(sides) - 1) / 2 for x in range(len(conditions))], conditions, rotation=30, ha="right")
        ax.set_ylim(0, 105)
        ax.set_title(textwrap.fill(name, 40), fontsize=9)   # policy specs can be long
        ax.set_ylabel("armed-side win %")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)


def figure_multigame(rows, path):
    groups = {}
    for r in rows:
        groups.setdefault(r["game"], []).append(r)
    label = lambda r: "baseline" if r["condition"] == "baseline" else \
        f"{'single R1' if r['source'] == 'single' else 'R_' + str(r['source'])}{' placebo' if r['condition'] == 'placebo' else ''}"   # noqa: E731
    _bars(rows, groups, label, path, "multigame transfer: win % of the armed side (95% Wilson CI)")


def figure_distill(rows, path):
    groups = {}
    for r in rows:
        groups.setdefault(f"{r['game']}: {r['student']}", []).append(r)
    _bars(rows, groups, lambda r: r["condition"], path, "distillation: the student's win % on the armed side")


FIGURES = {"within": figure_within, "cross": figure_cross, "multigame": figure_multigame,
           "distill": figure_distill, "evaluate": figure_distill}


# ----------------------------------------------------------------------------- writing
def write_report(out, protocol: str, result: dict, config: dict) -> dict:
    """Write the CSV, JSON, Markdown and PNG of a protocol run; returns {kind: path}."""
    import pandas as pd
    out = Path(out)
    rows = result["rows"]
    paths = {"json": out / f"{protocol}.json"}
    payload = {"protocol": protocol, "config": config, **result}
    atomic_write_text(paths["json"], json.dumps(payload, indent=2, sort_keys=True, default=str))
    if not rows:
        return paths
    frame = pd.DataFrame(rows)
    frame = frame[[c for c in COLUMNS if c in frame.columns]]
    paths["csv"] = out / f"{protocol}.csv"
    with atomic_file(paths["csv"], "w", newline="") as handle:
        frame.to_csv(handle, index=False)
    md = [f"# SPaRTan {md_text(protocol)}: {md_text(config.get('model'))}", "", CELL_LEGEND, "", SUMMARIES[protocol](rows)]
    if protocol == "within":
        stops = result.get("stop_rule", {})
        if stops:
            md += ["", "Stop rule (" + ("enforced" if next(iter(stops.values()))["enforced"] else "reported only, every round played")
                   + "): " + md_text(next(iter(stops.values()))["rule"]) + ". "
                   + "; ".join(f"{md_text(g)}: stop after R{s['stop_round']}" if s["stop_round"] else f"{md_text(g)}: no stop"
                               for g, s in stops.items())]
    md += ["", "## All conditions", "", all_rows_table(rows), ""]
    paths["md"] = out / f"{protocol}.md"
    atomic_write_text(paths["md"], "\n".join(md))
    import matplotlib
    matplotlib.use("Agg")
    paths["png"] = out / f"{protocol}.png"
    FIGURES[protocol](rows, paths["png"])
    return paths
