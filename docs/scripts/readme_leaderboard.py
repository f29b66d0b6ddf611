"""The README's front-page figure and its caption, both from one seeded scripted tournament.

Run from the repository root (needs the bench extra)::

    python docs/scripts/readme_leaderboard.py

It runs the caption's command (``COMMAND``: the three scripted policies on every registered
game, 4 episodes per combination, seed 0; about 15 s on 2 cores) into a temporary folder, copies
the run's ``elo_heatmap.png`` to ``docs/assets/leaderboard.png`` with the run's counts and
per-game Elo in the PNG's text fields, and rewrites the caption of README.md and docs/index.md (between
the ``readme-leaderboard`` markers) from the same run. tests/test_docs.py runs the command again and
checks the caption and the picture's fields against what it produces.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURE = ROOT / "docs" / "assets" / "leaderboard.png"
# the front pages that show the figure (the README and the docs site's home), each with the caption
FRONT_PAGES = (ROOT / "README.md", ROOT / "docs" / "index.md")
TOURNAMENT_ARGS = ("tournament", "--agents", "scripted:heuristic,scripted:random,scripted:tit_for_tat",
                   "--episodes", "4", "--seed", "0", "--bootstrap", "200")
COMMAND = "socialgym " + " ".join(TOURNAMENT_ARGS)
CAPTION = re.compile(r"(<!-- readme-leaderboard -->\n)(.*?)(\n<!-- /readme-leaderboard -->)", re.S)


def run_tournament(out_dir: Path) -> dict:
    """Run ``COMMAND`` (this checkout's code) into ``out_dir``; its leaderboard summary."""
    subprocess.run([sys.executable, "-m", "socialgym_env.cli", *TOURNAMENT_ARGS, "--out", str(out_dir)],
                   cwd=ROOT, check=True, capture_output=True, text=True, timeout=900)
    return json.loads((out_dir / "leaderboard.json").read_text(encoding="utf-8"))


def _rounded(value):
    return None if value is None else round(value)


def figure_fields(summary: dict) -> dict:
    """What the picture shows, as text: the counts, every per-game Elo and each policy's overall
    Elo with its 95% interval (rounded; an unbounded end is null, drawn as a long bar)."""
    elo = {game: {policy: round(fit["elo"]) for policy, fit in fits.items() if fit.get("elo") is not None}
           for game, fits in summary["per_game"].items()}
    overall = {policy: [_rounded(row["elo"]), _rounded(row["lo"]), _rounded(row["hi"])]
               for policy, row in summary["overall"].items() if row.get("elo") is not None}
    return {"command": COMMAND, "episodes": str(summary["episodes"]), "games": str(len(summary["games"])),
            "competitive_games": str(len(summary["competitive_games"])), "per_game_elo": json.dumps(elo, sort_keys=True),
            "overall_elo_interval": json.dumps(overall, sort_keys=True)}


def caption(summary: dict) -> str:
    return (f"*Per-game Elo (the {len(summary['competitive_games'])} competitive games) and overall Elo with "
            f"95% intervals from a seeded scripted tournament: {summary['episodes']} episodes on all "
            f"{len(summary['games'])} games (`{COMMAND}`; the figure and this caption: "
            f"`python docs/scripts/readme_leaderboard.py`).*")


def page_caption(page: Path) -> str:
    found = CAPTION.search(page.read_text(encoding="utf-8"))
    if found is None:
        raise ValueError(f"{page} has no <!-- readme-leaderboard --> caption block")
    return found.group(2)


def main() -> int:
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    with tempfile.TemporaryDirectory() as tmp:
        summary = run_tournament(Path(tmp) / "run")
        info = PngInfo()
        for key, value in figure_fields(summary).items():
            info.add_text(f"socialgym:{key}", value)
        with Image.open(Path(tmp) / "run" / "elo_heatmap.png") as image:
            image.save(FIGURE, pnginfo=info)
    for page in FRONT_PAGES:
        page_caption(page)                   # the block must be there to be rewritten
        text = page.read_text(encoding="utf-8")
        page.write_text(CAPTION.sub(lambda m: m.group(1) + caption(summary) + m.group(3), text), encoding="utf-8")
    print(f"{FIGURE.relative_to(ROOT)} and its captions in README.md and docs/index.md: {summary['episodes']} episodes, "
          f"{len(summary['games'])} games ({len(summary['competitive_games'])} competitive)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
