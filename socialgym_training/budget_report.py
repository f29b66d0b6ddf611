"""The one-budget comparison's summary and learning curves (:mod:`socialgym_training.budget`),
from its ``results.jsonl`` alone: ``python -m socialgym_training.budget_report runs/budget``."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def done_stages(out: Path) -> dict:
    """(method, iteration) -> its results line, for every evaluated stage."""
    path = out / "results.jsonl"
    if not path.exists():
        return {}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip().endswith("}")]
    return {(r["method"], r["iteration"]): r for r in lines}


def exact_interval(wins: int, n: int) -> dict:
    """Win rate with its exact (Clopper-Pearson) 95% interval."""
    from scipy.stats import binomtest
    if n == 0:
        return {"rate": None, "low": None, "high": None, "k": 0, "n": 0}
    ci = binomtest(int(wins), int(n)).proportion_ci(confidence_level=0.95, method="exact")
    return {"rate": wins / n, "low": float(ci.low), "high": float(ci.high), "k": int(wins), "n": int(n)}


def summarise(lines: list, seed: int = 0) -> dict:
    """Per (method, iteration): its rate and, for the trained ones, the paired difference from
    the base on the deals both played (exact McNemar, paired bootstrap 95% interval)."""
    from socialgym_agents.paired import paired_delta
    base = next((r["wins"] for r in lines if r["method"] == "base"), {})
    out = {}
    for line in sorted(lines, key=lambda r: (r["method"], r["iteration"])):
        wins = line["wins"]
        entry = {"iteration": line["iteration"], "episodes": line["episodes"], "spec": line["spec"],
                 **exact_interval(sum(wins.values()), len(wins)), "training": line.get("training", {})}
        if line["method"] != "base":
            common = sorted(set(wins) & set(base))
            delta = paired_delta({s: (wins[s], base[s], 1) for s in common}, seed=seed)
            entry["vs_base"] = {"points": delta.points, "low": delta.lo, "high": delta.hi, "p": delta.p_value,
                                "pairs": delta.pairs, "test": delta.test, "interval": delta.interval}
        out.setdefault(line["method"], []).append(entry)
    return out


def plot(summary: dict, path: Path, title: str) -> None:
    """Win rate against episodes of play, one line per method from the shared base point."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from socialgym_env.atomic import atomic_savefig
    base = (summary.get("base") or [None])[0]
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for offset, (method, entries) in enumerate(sorted((m, e) for m, e in summary.items() if m != "base")):
        points = ([base] if base else []) + entries
        x = [p["episodes"] + 0.15 * (offset - 1) for p in points]      # side by side, not on top
        y = [p["rate"] for p in points]
        errors = [[p["rate"] - p["low"] for p in points], [p["high"] - p["rate"] for p in points]]
        axes.errorbar(x, y, yerr=errors, marker="o", capsize=3, label=method)
    if base:                    # the shared starting point, drawn even before any method has one
        axes.errorbar([0], [base["rate"]], yerr=[[base["rate"] - base["low"]], [base["high"] - base["rate"]]],
                      marker="s", color="black", capsize=3, linestyle="none", label="base")
    last = max([p["episodes"] for entries in summary.values() for p in entries] + [1])
    axes.set_xlim(-0.1 * last - 0.5, 1.1 * last + 0.5)
    axes.set_xlabel("episodes of play (per method)")
    axes.set_ylabel("win rate on held-out deals (exact 95%)")
    axes.set_ylim(0, 1)
    axes.set_title(title, fontsize=9)
    axes.legend()
    figure.tight_layout()
    atomic_savefig(figure, path, dpi=110)
    plt.close(figure)


def write_summary(out: Path, seed: int = 0) -> dict:
    from socialgym_env.atomic import atomic_write_json
    lines = list(done_stages(Path(out)).values())
    summary = summarise(lines, seed)
    atomic_write_json(Path(out) / "summary.json", summary, indent=1, sort_keys=True)
    n = len(lines[0]["wins"]) if lines else 0
    plot(summary, Path(out) / "curve.png", f"{n} held-out deals per point; paired with the base by deal")
    for method, entries in sorted(summary.items()):
        for e in entries:
            paired = e.get("vs_base")
            tail = f"  vs base {paired['points']:+.1f} pts [{paired['low']:+.1f}, {paired['high']:+.1f}] p={paired['p']:.3g}" \
                if paired else ""
            print(f"{method:5} it {e['iteration']} ({e['episodes']:3} episodes): {e['k']}/{e['n']} "
                  f"[{e['low']:.2f}, {e['high']:.2f}]{tail}")
    return summary


if __name__ == "__main__":
    write_summary(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/budget"))
