"""The leaderboard's two figures: the per-game Elo heatmap with the overall Elo (paper Figure 2) and
the role gaps per policy and hidden-role game (paper Table 6)."""
from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path
from typing import Optional

import numpy as np

from socialgym_env.atomic import atomic_savefig

from socialgym_agents.specs import short_names

from .tables import GAP_MARKS, gap_status, overall_groups, played_only, worst_mark


# Figures are drawn to be read where they are shown: a README or a docs page about 830 px wide, a
# leaderboard page 1,280 px. At DPI each point is DPI/72 px; FIGURE_WIDTH_IN inches * DPI px wide, a
# FONT_PT label is still about 12 px tall scaled to 830 px (the old 19.7-inch figure with 7-pt labels
# shrank them to 4 px there). tests/benchmarks/test_leaderboard_browser.py checks it.
DPI = 110
FONT_PT = 9
FIGURE_WIDTH_IN = 8.0


def label_colour(rgba) -> str:
    """'black' or 'white', whichever contrasts more with a cell of colour ``rgba`` (WCAG relative
    luminance: black text vanished on the darkest cells of a diverging map)."""
    def linear(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(float(c)) for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # contrast with black: (L + 0.05) / 0.05; with white: 1.05 / (L + 0.05)
    return "black" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "white"


def _annotate_cells(ax, m, image, text) -> None:
    """Write ``text(i, j)`` on every finite cell of ``m`` in the colour that contrasts with it."""
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if np.isfinite(m[i, j]):
                ax.text(j, i, text(i, j), ha="center", va="center", fontsize=FONT_PT - 1,
                        color=label_colour(image.cmap(image.norm(m[i, j]))))


def _wrapped(name: str, width: int = 12) -> str:
    """A policy name in lines of at most ``width`` characters, broken after a space, ``:``, ``=``,
    ``_``, ``/`` or ``&`` (a part longer than a line is cut at ``width``)."""
    parts = [piece[k:k + width] for piece in re.findall(r"[^ :=_/&]*[ :=_/&]?", name) if piece
             for k in range(0, len(piece), width)]
    lines = [""]
    for part in parts:
        if lines[-1] and len(lines[-1]) + len(part.rstrip()) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(line.strip() for line in lines)


def _figure_order(summary: dict) -> list[tuple[str, Optional[str]]]:
    """(policy, group label) in the figure's order: the ranked group by Elo, then each group shown
    apart (:func:`socialgym_benchmarks.leaderboard.tables.overall_groups`), labelled with its games."""
    return [(p, None if games is None else played_only(games, summary))
            for games, members in overall_groups(summary) for p in members]


def _heatmap_matrix(summary, policies):
    """Per-game Elo, a row per competitive game and a column per policy (NaN: not played)."""
    games = summary["competitive_games"]
    m = np.full((len(games), len(policies)), np.nan)
    for i, g in enumerate(games):
        for j, p in enumerate(policies):
            v = summary["per_game"].get(g, {}).get(p)
            if v:
                m[i, j] = v["elo"]
    return m


def _or(value, default):
    return default if value is None else value


UNBOUNDED_BAR = 600.0


def _draw_per_game(ax, summary: dict, policies: list, names: dict) -> None:
    """The heatmap: a row per game (categories ruled off), a column per policy named on top."""
    games = summary["competitive_games"]
    if not (games and policies):
        ax.text(0.5, 0.5, "no competitive games", ha="center", va="center")
        ax.set_axis_off()
        return
    m = _heatmap_matrix(summary, policies)
    span = max(50.0, float(np.nanmax(np.abs(m - 1000))) if np.isfinite(m).any() else 100.0)
    image = ax.imshow(m, cmap="RdBu_r", vmin=1000 - span, vmax=1000 + span, aspect="auto")
    _annotate_cells(ax, m, image, lambda i, j: f"{m[i, j]:.0f}")
    first_apart = next((j for j, p in enumerate(policies) if p not in overall_groups(summary)[0][1]), None)
    if first_apart is not None:               # the groups shown apart, ruled off from the ranked one
        ax.axvline(first_apart - 0.5, color="black", linewidth=1.5)
    cats = [summary["game_info"][g]["category"] for g in games]
    for i in range(1, len(games)):
        if cats[i] != cats[i - 1]:
            ax.axhline(i - 0.5, color="black", linewidth=1.5)
    ax.set_yticks(range(len(games)))
    ax.set_yticklabels([summary["game_info"][g].get("name") or g for g in games], fontsize=FONT_PT)
    ax.xaxis.tick_top()
    ax.set_xticks(range(len(policies)))
    ax.set_xticklabels([_wrapped(names[p]) for p in policies], fontsize=FONT_PT - 1)
    ax.set_title("Per-game Elo (blue below 1000, red above)", fontsize=FONT_PT + 1)


def _overall_rows(order: list) -> list[tuple[Optional[str], str]]:
    """The overall panel's rows, top to bottom: (policy, '') for a policy, (None, label) above
    each group shown apart."""
    rows = []
    for k, (policy, group) in enumerate(order):
        if group is not None and (k == 0 or order[k - 1][1] != group):
            rows.append((None, f"{group} (not ranked against the rows above)"))
        rows.append((policy, ""))
    return rows


def _draw_overall(ax, summary: dict, order: list, names: dict) -> None:
    """Each policy's overall Elo with its 95% CI, a row each; each group shown apart under a ruled
    row that names its games."""
    rows = _overall_rows(order)
    for y, (p, label) in enumerate(rows):
        if p is None:
            ax.axhline(y - 0.5, color="black", linewidth=1)
            ax.text(0.01, y, label, transform=ax.get_yaxis_transform(), ha="left", va="center",
                    fontsize=FONT_PT - 1, style="italic")
            continue
        row = summary["overall"][p]
        if row["elo"] is None:
            continue
        e = row["elo"]
        # an unbounded side (None) is drawn UNBOUNDED_BAR long: past every finite bar of a usual board;
        # a policy that wins everything can sit outside its own interval: the bar ends are clipped
        lo, hi = _or(row["lo"], e - UNBOUNDED_BAR), _or(row["hi"], e + UNBOUNDED_BAR)
        ax.errorbar([e], [y], xerr=[[max(e - lo, 0)], [max(hi - e, 0)]], fmt="o", color="tab:blue", capsize=3)
        ax.annotate(f"{e:.0f}", (e, y), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=FONT_PT - 1)
    ax.axvline(1000, color="grey", linestyle=":")
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label if p is None else names[p] for p, label in rows], fontsize=FONT_PT)
    for tick, (p, _) in zip(ax.get_yticklabels(), rows):
        tick.set_visible(p is not None)
    ax.tick_params(axis="x", labelsize=FONT_PT)
    ax.set_xlabel("Overall Elo (95% CI)", fontsize=FONT_PT)


def plot_elo_heatmap(summary: dict, path: Path) -> None:
    """Per-game Elo heatmap (a row per game, grouped by category; a column per policy, ranked by
    overall Elo) above each policy's overall Elo and its 95% CI (paper Figure 2, turned on its side
    so that it stays legible at a page's width however many games there are)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = _figure_order(summary)
    policies = [p for p, _ in order]
    names = short_names(policies)
    games = summary["competitive_games"]
    label_lines = max((_wrapped(names[p]).count("\n") + 1 for p in policies), default=1)
    top = 0.5 + 0.17 * label_lines
    heights = [max(1.0, 0.26 * len(games)) + top, 0.6 + 0.32 * max(1, len(_overall_rows(order)))]
    width = max(FIGURE_WIDTH_IN, 3.4 + 1.1 * len(policies))
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(width, sum(heights) + 0.4),
                                  gridspec_kw={"height_ratios": heights})
    _draw_per_game(ax, summary, policies, names)
    _draw_overall(ax2, summary, order, names)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=DPI)
    plt.close(fig)


def plot_role_gap(summary: dict, path: Path) -> None:
    """Elo-Alt − Elo-Main per policy × hidden-role game, with row means (paper Table 6)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = list(summary["roles"])
    policies = summary["policies"]
    fig_w = max(5.0, 2.5 + 0.7 * (len(games) + 1))
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
            marks[i, -1] = worst_mark(marks[i, :-1], GAP_MARKS["figure"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m[:, -1] = np.nanmean(m[:, :-1], axis=1)
        span = max(50.0, float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 50.0)
        image = ax.imshow(m, cmap="PuOr", vmin=-span, vmax=span, aspect="auto")
        _annotate_cells(ax, m, image, lambda i, j: f"{m[i, j]:+.0f}" + (f"\n{marks[i, j]}" if marks[i, j] else ""))
        ax.axvline(len(games) - 0.5, color="black", linewidth=1.5)
        ax.set_xticks(range(len(games) + 1))
        ax.set_xticklabels([summary["game_info"][g].get("name") or g for g in games] + ["Mean"],
                           rotation=45, ha="right", fontsize=FONT_PT)
        ax.set_yticks(range(len(policies)))
        ax.set_yticklabels(list(short_names(policies).values()), fontsize=FONT_PT)
    # Wrapped to the figure's width (one line was clipped on narrow figures).
    title = "Role gap: Elo-Alt − Elo-Main\n(positive = minority/deceptive side stronger)"
    if games and (marks == GAP_MARKS["figure"]["not identified"]).any():
        title += "\nnot id. = the data cannot tell this policy's gap (e.g. two policies: only their mean gap)"
    if games and (marks == GAP_MARKS["figure"]["separated"]).any():
        title += "\nsep. = outcomes separated: the gap's interval is unbounded, the data do not pin its size"
    width = int(11 * fig_w)         # characters of FONT_PT text per line of the figure's width
    ax.set_title("\n".join(textwrap.fill(line, width) for line in title.split("\n")), fontsize=FONT_PT)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=DPI)
    plt.close(fig)
