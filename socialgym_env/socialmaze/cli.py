"""Command line for Hidden Role Deduction data sets (mounted as ``socialgym maze``).

    python -m socialgym_env.socialmaze.cli generate --n 500 --seed 0 --preset easy \\
        --variant full --out data/hrd_easy_full.jsonl
    python -m socialgym_env.socialmaze.cli show data/hrd_easy_full.jsonl --index 0 --answer
    python -m socialgym_env.socialmaze.cli evaluate data/hrd_easy_full.jsonl --solver heuristic
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import typer

from .baselines import SOLVERS
from .dataset import iter_dataset, read_jsonl, write_jsonl
from .generator import DEFAULT_MAX_ATTEMPTS, GenerationStats
from .instance import DEFAULT_ROUNDS, PRESETS, VARIANTS, MazeConfig
from .scoring import score_answer

app = typer.Typer(
    help="SocialMaze Hidden Role Deduction: generate, inspect and score puzzle data sets.",
    no_args_is_help=True,
)


@app.command()
def generate(
    out: Path = typer.Option(..., "--out", "-o", help="JSONL file to write."),
    n: int = typer.Option(100, "--n", min=0, help="Number of instances."),
    seed: int = typer.Option(0, "--seed", help="Data set seed (same seed => same file)."),
    preset: str = typer.Option("easy", help=f"Size preset: {', '.join(f'{k} (n={v})' for k, v in PRESETS.items())}."),
    variant: str = typer.Option("full", help=f"Role variant: {', '.join(VARIANTS)}."),
    players: Optional[int] = typer.Option(None, "--players", help="Override the preset's player count (>= 4)."),
    rounds: int = typer.Option(DEFAULT_ROUNDS, "--rounds", help="Rounds of statements."),
    rumormongers: Optional[int] = typer.Option(None, "--rumormongers", help="Rumormonger count x (variant default if omitted)."),
    lunatics: Optional[int] = typer.Option(None, "--lunatics", help="Lunatic count y (variant default if omitted)."),
    max_attempts: int = typer.Option(DEFAULT_MAX_ATTEMPTS, help="Simulated games to try per instance."),
) -> None:
    """Write N certified instances as JSONL."""
    try:
        config = MazeConfig.from_preset(
            preset, variant, n_players=players, n_rounds=rounds,
            n_rumormongers=rumormongers, n_lunatics=lunatics,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    stats = GenerationStats()
    p1_roles: Counter[str] = Counter()
    evidence: Counter[str] = Counter()

    def rows():
        for inst in iter_dataset(n, seed, config, max_attempts=max_attempts, stats=stats):
            p1_roles[inst.player1_role.value] += 1
            evidence[inst.evidence] += 1
            yield inst

    count = write_jsonl(rows(), out)
    typer.echo(
        f"wrote {count} instances to {out} (n_players={config.n_players}, rounds={config.n_rounds}, "
        f"variant={config.variant}, x={config.n_rumormongers}, y={config.n_lunatics}); "
        f"attempts={stats.attempts}, acceptance={stats.acceptance_rate:.3f}"
    )
    typer.echo(f"Player 1 true roles: {dict(sorted(p1_roles.items()))}; evidence: {dict(sorted(evidence.items()))}")


@app.command()
def show(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL data set."),
    index: int = typer.Option(0, "--index", "-i", help="Row to print (0-based)."),
    answer: bool = typer.Option(False, "--answer", help="Also print the answer and roles."),
) -> None:
    """Print one instance's prompt."""
    data = read_jsonl(path)
    if not data:
        raise typer.BadParameter(f"{path} holds no instances", param_hint="PATH")
    if not 0 <= index < len(data):
        raise typer.BadParameter(f"index must be in 0..{len(data) - 1}", param_hint="--index")
    inst = data[index]
    typer.echo(inst.prompt())
    if answer:
        typer.echo(
            f"\nAnswer: Criminal: Player {inst.criminal}; Player 1 role: {inst.player1_role.value} "
            f"(evidence={inst.evidence}, consistent assignments={inst.n_consistent})"
        )
        typer.echo("Roles: " + ", ".join(f"P{i + 1}={r.value}" for i, r in enumerate(inst.roles)))


@app.command()
def evaluate(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL data set."),
    solver: str = typer.Option("heuristic", help=f"Baseline solver: {', '.join(SOLVERS)}."),
) -> None:
    """Score a baseline solver on a data set (accuracy of both parts and each part)."""
    if solver not in SOLVERS:
        raise typer.BadParameter(f"unknown solver {solver!r}; valid: {', '.join(SOLVERS)}", param_hint="--solver")
    data = read_jsonl(path)
    results = [score_answer(SOLVERS[solver](inst.puzzle), inst) for inst in data]
    k = max(len(results), 1)
    typer.echo(
        f"{solver}: n={len(results)} accuracy={sum(r.reward for r in results) / k:.3f} "
        f"criminal={sum(r.criminal_correct for r in results) / k:.3f} "
        f"role={sum(r.role_correct for r in results) / k:.3f}"
    )


def main() -> None:
    app()       # the subpackage stays self-contained; `socialgym maze` goes through the root's error handler


if __name__ == "__main__":
    main()
