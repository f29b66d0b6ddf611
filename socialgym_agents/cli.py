"""``socialgym play``: the agents layer's command (one episode with any policy specs).

Contributed to the root ``socialgym`` app through the ``socialgym.commands`` entry-point group
(see ``socialgym_env.cli``), so the engine never imports this layer.
"""
from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

import socialgym_env

from socialgym_env.cli_errors import check_output_file
from socialgym_env.console import OutputConsole

from .registry import PolicySpecError, check_spec, parse_specs
from .runner import EpisodeJob, PolicyPool, run_jobs
from .specs import AgentSpec

HUMAN = AgentSpec("human")

console = OutputConsole()


def parse_config(pairs: list[str]) -> dict:
    """``key=value`` pairs; values are read as JSON when they parse (3, true, "x"), else text."""
    config = {}
    for pair in pairs:
        if "=" not in pair:
            raise typer.BadParameter(f"config must be key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            config[key] = json.loads(value)
        except json.JSONDecodeError:
            config[key] = value
    return config


def fill_seats(specs: list, num_seats: int, game: str) -> list:
    """One spec per seat: the specs in seat order, the last one repeated for the seats left."""
    if not specs:
        raise typer.BadParameter("give at least one policy spec", param_hint="--agents")
    if len(specs) > num_seats:
        raise typer.BadParameter(f"{game} has {num_seats} seats; --agents gave {len(specs)} specs",
                                 param_hint="--agents")
    return specs + [specs[-1]] * (num_seats - len(specs))


def play_with_humans(job: EpisodeJob, pool: PolicyPool, seat_specs: dict, log: Path) -> dict:
    """One episode with human seats at this terminal, played in seat order with the terminal
    table (socialgym_agents.human); logged like run_jobs logs, a failure (end of input) as a failed record."""
    from socialgym_env.logs import append_episode

    from .human import HumanPolicy, TerminalOutput, TerminalTable
    from .jobs import failed_record
    from .runner import play_episode

    output = TerminalOutput()
    pool.policies.setdefault(HUMAN, HumanPolicy(seed=pool.seed, output=output))
    try:
        record = play_episode(job, pool, on_turn=TerminalTable(seat_specs, output))
    except Exception as err:               # end of input, a model server down: logged, not lost
        record = failed_record(job, err)
    append_episode(log, record)
    return record


def play(game: str = typer.Argument(..., help="game id, see `socialgym list`"),
         agents: str = typer.Option("scripted:random", help="comma-separated policy specs, one per seat in "
                                    "seat order; the last one fills the seats left (human,smollm2: you in "
                                    "seat 0, the model in every other seat)"),
         seed: int = typer.Option(0, help="episode seed"),
         config: list[str] = typer.Option([], "--config", "-c", help="game config key=value (repeatable)"),
         log: Path = typer.Option(Path("runs/play.jsonl"), help="JSONL log the episode is appended to"),
         quiet: bool = typer.Option(False, help="do not print the transcript")):
    """Play one episode, print the public transcript and the result, append the log."""
    try:
        env = socialgym_env.make(game, **parse_config(config))
    except socialgym_env.SocialGymError as err:
        raise typer.BadParameter(str(err)) from None
    try:                                   # a bad spec is a bad argument, found before playing
        given = parse_specs(agents)        # parsed once; the checks, the pool and the job take these
        for spec in sorted(set(given), key=str):
            check_spec(spec, games=[game])
    except PolicySpecError as err:
        raise typer.BadParameter(str(err), param_hint="--agents") from None
    seats = fill_seats(given, len(env.possible_agents), game)
    check_output_file(log, "--log")
    pool = PolicyPool(seed=seed)
    job = EpisodeJob(game, seed, seats, config=parse_config(config))
    if HUMAN in seats:
        # A person plays: no spinner on the input line; the table says who is thinking and
        # shows the other seats' moves as they happen.
        console.print("seats: " + ", ".join(f"{a} {s}" for a, s in zip(env.possible_agents, job.seats)),
                      markup=False, highlight=False)
        record = play_with_humans(job, pool, dict(zip(env.possible_agents, job.seats)), log)
    else:
        with console.status(f"playing {game} (seed {seed})..."):
            # Whatever goes wrong inside the episode (a model server down, a policy bug) is logged
            # as a failed record with its reason, as in a tournament -- never a bad CLI argument.
            record = run_jobs([job], pool, log_path=log, resume=False)[0]
    if record.get("failed"):
        console.print(f"episode failed: {record['error']}", markup=False, highlight=False)
        console.print(f"log: {log} (episode {record['episode_id']}, logged as failed)")
        raise typer.Exit(1)
    if not quiet and HUMAN not in seats:     # a person has seen the board as it went
        for line in record["transcript"]:
            console.print(line, markup=False, highlight=False)
    table = Table(title=f"{game}: {record['reason']}")
    for column in ("seat", "name", "role", "policy", "score", "reward"):
        table.add_column(column)
    for seat in record["roster"]:
        agent = seat["agent"]
        table.add_row(agent, seat["name"], seat["role"], seat["policy"], f"{record['scores'][agent]:g}",
                      f"{record['rewards'][agent]:+g}")
    console.print(table)
    console.print(f"log: {log} (episode {record['episode_id']})")


def register(app: typer.Typer) -> None:
    """Add ``play`` to the root app."""
    app.command("play")(play)
