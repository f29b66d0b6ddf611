"""``socialgym spartan ...``: reflect, evaluate, and the four protocols.

Mounted by the root CLI through the ``socialgym.commands`` entry point (``register``); runnable
alone as ``python -m socialgym_benchmarks.studies.spartan.cli``.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from socialgym_env.errors import SocialGymError

app = typer.Typer(help="SPaRTan: self-play, reflect, transfer playbooks (the paper's four protocols).",
                  no_args_is_help=True, add_completion=False)

USER_ERRORS = (ValueError, FileNotFoundError, SocialGymError)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="spartan")


def run_protocol(protocol: str, config_path=None, out=None, settings=(), reflector_fn=None, progress=True,
                 **values) -> dict:
    """Typer-free body of every command: load the config, run the protocol (resumable), write
    the report; returns the protocol's result with ``paths``. ``reflector_fn`` (a Reflector or a
    function prompt -> text) replaces the config's reflector spec (tests)."""
    from .experiment import Experiment, load_config
    from .protocols import PROTOCOL_RUNNERS
    from .report import write_report
    config = load_config(config_path, settings, protocol=protocol, **values)
    out = Path(out or f"runs/spartan-{protocol}")
    started, cpu_started = time.perf_counter(), time.process_time()
    exp = Experiment(config, out, reflector=reflector_fn, progress=progress)
    result = PROTOCOL_RUNNERS[protocol](exp)
    result["failed_now"] = exp.failed
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["cpu_seconds"] = round(time.process_time() - cpu_started, 1)   # all threads of this process
    result["paths"] = {k: str(v) for k, v in write_report(out, protocol, result, config.to_dict()).items()}
    return result


def _run(protocol: str, **kwargs) -> None:
    try:
        result = run_protocol(protocol, **kwargs)
    except USER_ERRORS as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    for playbook in result.get("playbooks", []):
        typer.echo(f"playbook {playbook['id']} ({playbook.get('chars')} chars)")
    for game, stop in (result.get("stop_rule") or {}).items():
        typer.echo(f"{game}: {stop['rounds_played']} round(s) played; the stop rule says stop after R{stop['stop_round']}"
                   + ("" if stop["enforced"] else " (not enforced)")
                   if stop["stop_round"] else f"{game}: {stop['rounds_played']} round(s) played; the stop rule never said stop")
    md = result["paths"].get("md")
    if md:
        typer.echo(Path(md).read_text(encoding="utf-8").split("## All conditions")[0].rstrip())
    typer.echo(f"wrote {', '.join(result['paths'].values())} in {result['seconds']} s "
               f"({result['cpu_seconds']} s of CPU in this process)")
    if result["failed_now"]:            # the report leaves them out: not all that was asked was done
        typer.echo(f"error: {result['failed_now']} of the games played now FAILED (their log records hold the "
                   "error; rerunning the same command retries them)", err=True)
        raise typer.Exit(1)


def _split(values: Optional[List[str]]) -> Optional[list]:
    if not values:
        return None
    return [x.strip() for v in values for x in v.split(",") if x.strip()]


CONFIG = typer.Argument(None, help="experiment file (.toml, .yaml, .json); keys as in socialgym_benchmarks/studies/spartan/experiment.py")
OUT = typer.Option(None, "--out", help="run folder (default runs/spartan-<protocol>); rerun to resume")
SET = typer.Option(None, "--set", "-s", help="key=value over the experiment file (repeatable)")


@app.command("reflect")
def reflect_cmd(config: Optional[Path] = CONFIG, out: Optional[Path] = OUT, settings: Optional[List[str]] = SET,
                game: Optional[List[str]] = typer.Option(None, "--game", help="game id(s); several = one multigame playbook"),
                model: Optional[str] = typer.Option(None, "--model", help="policy spec on every seat"),
                reflector: Optional[str] = typer.Option(None, "--reflector", help="spec that writes the playbook (default: --model); file:PATH = fixed text"),
                games: Optional[int] = typer.Option(None, "--games", help="self-play games per round (N)"),
                rounds: Optional[int] = typer.Option(None, "--rounds", help="reflection rounds R1..Rn"),
                seed: Optional[int] = typer.Option(None, "--seed"),
                quick: Optional[bool] = typer.Option(None, "--quick/--full", help="the tournament's --quick game preset")):
    """N self-play games, then a playbook (Appendix-F prompt); round t revises R(t-1)."""
    _run("reflect", config_path=config, out=out, settings=settings or (), games=_split(game), model=model,
         reflector=reflector, selfplay_games=games, rounds=rounds, seed=seed, quick=quick)


@app.command("evaluate")
def evaluate_cmd(playbook: Path = typer.Argument(..., help="playbook file (.md/.txt; its .json metadata is read when present)"),
                 game: List[str] = typer.Option(..., "--game", help="game id(s) to evaluate on"),
                 model: Optional[str] = typer.Option(None, "--model", help="spec of the armed side"),
                 opponent: Optional[str] = typer.Option(None, "--opponent", help="spec of the unarmed side (default: --model)"),
                 k: Optional[int] = typer.Option(None, "-k", "--eval-games", help="games per side and condition"),
                 placebo: Optional[bool] = typer.Option(None, "--placebo/--no-placebo"),
                 out: Optional[Path] = OUT, settings: Optional[List[str]] = SET, config: Optional[Path] = CONFIG,
                 seed: Optional[int] = typer.Option(None, "--seed"),
                 quick: Optional[bool] = typer.Option(None, "--quick/--full")):
    """Arm each side with PLAYBOOK vs the unarmed model: win % (Wilson CI), delta vs baseline, placebo."""
    # evaluating one playbook is the distillation protocol with the armed model as the student
    try:
        from .experiment import load_config
        from .playbook import playbook_from_file
        base = load_config(config, settings or (), protocol="evaluate")
        playbook_from_file(playbook)         # missing, empty or binary: before anything is played
    except USER_ERRORS as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    armed = model or base.model
    _run("evaluate", config_path=config, out=out, settings=settings or (),
         games=_split(game), model=opponent or armed, students=[armed], playbook=str(playbook),
         eval_games=k, placebo=placebo, seed=seed, quick=quick)


def _protocol_command(protocol: str, doc: str):
    def command(config: Optional[Path] = CONFIG, out: Optional[Path] = OUT, settings: Optional[List[str]] = SET,
                model: Optional[str] = typer.Option(None, "--model", help="policy spec (overrides the file)")):
        _run(protocol, config_path=config, out=out, settings=settings or (), model=model)
    command.__doc__ = doc
    app.command(protocol)(command)


_protocol_command("within", "Within-game iterated reflection R1..R4 (Table 1 / 10); stop_rule=true ends the chain early.")
_protocol_command("cross", "Cross-game transfer 1->n: each source's R1 on every other target (Fig. 3 heatmap).")
_protocol_command("multigame", "Multigame n->1: playbooks from combined self-play (wcs, wcsu, wcsur) on held-out and in-distribution targets.")
_protocol_command("distill", "Distillation: the teacher's (model) playbook given to each student vs the unarmed teacher.")


if __name__ == "__main__":
    import sys

    from socialgym_env.cli_errors import invoke_typer, main_of
    main_of(lambda: invoke_typer(app, sys.argv[1:], "socialgym_benchmarks.studies.spartan.cli"), "socialgym_benchmarks.studies.spartan.cli")
