"""``socialgym export sft|dpo|grpo LOGS... --out DIR``: training datasets from episode logs.

Declared in setup.cfg (``socialgym.commands``: ``export = training.cli:register``); the root
``socialgym`` app calls :func:`register`.
"""
from __future__ import annotations

import json
from typing import List

import typer

from .export import EXPORT_KINDS, OUTCOMES, ExportFilter, export


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _split(values: List[str]) -> list:
    """Repeatable options that also take comma-separated lists."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def export_cmd(kind: str = typer.Argument(..., help=f"what to build: {', '.join(EXPORT_KINDS)}"),
               logs: List[str] = typer.Argument(..., help="episode log files (.jsonl) or folders of them"),
               out: str = typer.Option(..., "--out", help="output folder (datasets save_to_disk + <split>.jsonl)"),
               game: List[str] = typer.Option([], "--game", help="keep these games (repeatable or a,b)"),
               role: List[str] = typer.Option([], "--role", help="keep these roles"),
               policy: List[str] = typer.Option([], "--policy", help="keep these policy specs (glob: 'smollm2*')"),
               outcome: List[str] = typer.Option([], "--outcome", help=f"keep seats with these outcomes: {', '.join(OUTCOMES)}"),
               phase: List[str] = typer.Option([], "--phase", help="keep these phases"),
               legal_only: bool = typer.Option(False, "--legal-only", help="only valid first-try replies"),
               test_fraction: float = typer.Option(0.1, "--test-fraction", help="share of episodes in the test split"),
               seed: int = typer.Option(0, help="seed of the episode split")):
    """Export decisions from episode logs as a Hugging Face dataset (chat format) plus JSONL."""
    if kind not in EXPORT_KINDS:
        _fail(f"unknown export {kind!r}; valid: {', '.join(EXPORT_KINDS)}")
    try:
        keep = ExportFilter(games=_split(game), roles=_split(role), policies=_split(policy),
                            outcomes=_split(outcome), phases=_split(phase), legal_only=legal_only)
        summary = export(kind, logs, out, keep, test_fraction=test_fraction, seed=seed)
    except (ValueError, FileNotFoundError) as err:
        _fail(str(err))
    typer.echo(json.dumps({"out": out, "rows": summary["rows"], "episodes": summary["episodes"]}))


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)


if __name__ == "__main__":   # python -m training.cli export ... (before the root app loads entry points)
    _app = typer.Typer(add_completion=False, no_args_is_help=True)
    register(_app)
    _app.command("version", hidden=True)(lambda: typer.echo("socialgym export"))
    _app()
