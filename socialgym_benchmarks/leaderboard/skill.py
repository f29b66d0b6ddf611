"""The leaderboard's openskill option (``socialgym leaderboard --rating openskill``): the
Plackett–Luce ratings of :mod:`socialgym_agents.skill` (the arena's live ratings) over the same
finished records the Bradley–Terry fit reads, written beside its files as ``openskill.json``
and ``openskill.md`` and printed."""
from __future__ import annotations

import json
from pathlib import Path

from socialgym_agents.skill import skill_table
from socialgym_env.atomic import atomic_write_text

from ..ratings import load_records

COLUMNS = ("player", "mu", "sigma", "lo", "hi", "ordinal", "episodes")


def build_skill_table(logdir, out: Path) -> list[dict]:
    """Rate the finished records of ``logdir`` in log order; write the table into ``out``."""
    records, _ = load_records(logdir)
    rows = skill_table(records)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "openskill.json", json.dumps({"model": "openskill Plackett-Luce", "order": "log order",
                                                          "interval": "mu +- 1.96 sigma", "ratings": rows},
                                                         indent=2) + "\n")
    atomic_write_text(out / "openskill.md", format_skill_table(rows) + "\n")
    return rows


def format_skill_table(rows: list[dict]) -> str:
    """The table as Markdown, best first by ordinal (mu - 3 sigma)."""
    lines = ["| rank | " + " | ".join(COLUMNS) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
    for rank, row in enumerate(rows, 1):
        cells = [row["player"]] + [f"{row[c]:.2f}" for c in COLUMNS[1:-1]] + [str(row["episodes"])]
        lines.append(f"| {rank} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
