"""The leaderboard's two figures: the per-game Elo heatmap with the overall Elo (paper Figure 2) and
the role gaps per policy and hidden-role game (paper Table 6)."""
from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import numpy as np

from socialgym_env.atomic import atomic_savefig

from socialgym_agents.specs import short_names

from .tables import GAP_MARKS, gap_status, worst_mark


def _heatmap_matrix(summary):
    games, policies = summary["competitive_games"], summary["policies"]
    m = np.full((len(policies), len(games)), np.nan)
    for j, g in enumerate(games):
        for i, p in enumerate(policies):
            v = summary["per_game"].get(g, {}).get(p)
            if v:
                m[i, j] = v["elo"]
    return m


def _or(value, default):
    return default if value is None else value


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
            marks[i, -1] = worst_mark(marks[i, :-1], GAP_MARKS["figure"])
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
