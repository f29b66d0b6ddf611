"""``socialgym analyze`` and ``socialgym jester run`` (joined to the root app through the
``socialgym.commands`` entry point ``triadic = socialgym_benchmarks.studies.triadic.cli:register``)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from socialgym_agents.registry import parse_specs

from .lessons import DEFAULT_THRESHOLD

jester_app = typer.Typer(help="The Jester self-learning study of Triadic Werewolf (seed 002).",
                         no_args_is_help=True, add_completion=False)


def _fail(message: str) -> None:
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(2)


def analyze_cmd(path: Path = typer.Argument(..., help="a study folder (logs/, lessons/), a log folder or a .jsonl file"),
                out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: PATH/analysis or ./analysis)"),
                lessons: Optional[Path] = typer.Option(None, "--lessons", help="folder of lessons files (default: PATH/lessons)")):
    """Tables (CSV) and figures (PNG) of the Triadic Werewolf study from its logs."""
    from .analysis import analyze
    if not path.exists():
        _fail(f"{path} does not exist; give a study folder, a folder of *.jsonl logs or a .jsonl file")
    if lessons is not None and not lessons.is_dir():
        _fail(f"--lessons {lessons} is not a folder of lessons *.json files")
    out = out or ((path / "analysis") if path.is_dir() else Path("analysis"))
    result = analyze(path, out, lessons)
    if not result["episodes"]:
        _fail(f"no finished triadic_werewolf episode under {path} ({result['skipped']} failed or unfinished)")
    typer.echo(f"{result['episodes']} episodes ({result['skipped']} skipped), {result['lessons']} lessons")
    for row in result["tables"]["win_rates"]:
        if row["faction"] == "jester":
            typer.echo(f"  {row['model']} {row['condition']}: Jester wins {row['wins']}/{row['games']} = "
                       f"{row['rate']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]")
    typer.echo(f"wrote {len(result['files'])} files to {out}")


@jester_app.command("run")
def jester_run(models: str = typer.Option("smollm2", "--models", help="policy specs, comma-separated; one model plays every role"),
               games: int = typer.Option(10, "--games", min=1, help="K games per cell"),
               conditions: str = typer.Option("OFF,ON", "--conditions", help="OFF, ON or both, in run order"),
               seed: int = typer.Option(0, "--seed"),
               out: Path = typer.Option(Path("runs/jester"), "--out"),
               threshold: float = typer.Option(DEFAULT_THRESHOLD, "--threshold", help="MiniLM cosine similarity at which a new lesson is a duplicate"),
               reflect_tokens: int = typer.Option(400, "--reflect-tokens", help="token budget of the reflection reply"),
               reflect_chars: int = typer.Option(12000, "--reflect-chars", help="transcript characters the reflection sees (its end; 0 = all)"),
               quick: bool = typer.Option(False, "--quick", help="2 days, 1 debate and 1 extra turn per day (minutes on a CPU)"),
               reflector: str = typer.Option("", "--reflector", help="model spec that writes the lessons (default: the playing model)"),
               config: Optional[List[str]] = typer.Option(None, "--config", "-c", help="game config key=value (repeatable)"),
               roles: str = typer.Option("fixed", "--roles", help="name-to-role regime: fixed (the Jester keeps game 1's "
                                         "seat and name, the seed's main runs) | shuffled (dealt per game)")):
    """Play the OFF/ON cells in order (resumable), writing OUT/logs, OUT/lessons, OUT/study.json."""
    from .study import CONDITIONS, ROLE_REGIMES, StudyConfig, parse_overrides, run_study
    if roles not in ROLE_REGIMES:
        _fail(f"--roles {roles!r}: valid values are {', '.join(ROLE_REGIMES)}")
    wanted = [c.strip() for c in conditions.split(",") if c.strip()]
    if not wanted or any(c not in CONDITIONS for c in wanted):
        _fail(f"--conditions {conditions!r}: valid values are {', '.join(CONDITIONS)} (comma-separated)")
    if not 0 < threshold <= 1:
        _fail(f"--threshold {threshold}: must be in (0, 1]")
    try:
        overrides = parse_overrides(config or [])
    except ValueError as err:
        _fail(str(err))
    try:
        specs = [str(spec) for spec in parse_specs(models)]
    except ValueError as err:
        _fail(f"--models: {err}")
    cfg = StudyConfig(models=specs, games=games, conditions=wanted,
                      seed=seed, out=str(out), threshold=threshold, reflect_tokens=reflect_tokens,
                      reflect_chars=reflect_chars, quick=quick, reflector=reflector, config=overrides, roles=roles)
    try:
        results = run_study(cfg, progress=typer.echo)
    except ValueError as err:       # a bad policy spec or game config key, before any game
        _fail(str(err))
    typer.echo(f"logs: {out / 'logs'}; lessons: {out / 'lessons'}; next: socialgym analyze {out}")
    records = [r for cell in results.values() for r in cell]
    failed = sum(1 for r in records if r.get("failed"))
    if failed:                      # not what was asked: the exit code says so too
        typer.echo(f"Error: {failed} of {len(records)} games FAILED (their log records hold the error)", err=True)
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    """``analyze`` at the top level, ``jester run`` as a group."""
    root.command("analyze")(analyze_cmd)
    root.add_typer(jester_app, name="jester")
