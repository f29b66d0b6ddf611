"""The ``socialgym`` command line (typer).

    socialgym list                                   the game catalogue
    socialgym play GAME --agents a,b,... --seed N    play one episode, print the transcript, log it
    socialgym tournament / leaderboard / replay      (benchmarks.cli, when installed)
    socialgym maze ...                               SocialMaze Hidden Role Deduction data sets
"""
from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

import socialgym_env

app = typer.Typer(help="Social Gym: multi-agent social games for LLM agents.", no_args_is_help=True,
                  add_completion=False)
console = Console()


@app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="print the catalogue as JSON")):
    """Print the game catalogue."""
    games = socialgym_env.list_games()
    if as_json:
        typer.echo(json.dumps(games, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"Social Gym games ({len(games)})")
    for column in ("id", "name", "category", "players", "information", "communication", "iteration", "skills"):
        table.add_column(column)
    for g in games:
        table.add_row(g["id"], g["name"], g["category"] + (" (coop)" if g["cooperative"] else ""),
                      str(g["num_players"]), g["information"], g["communication"], g["iteration"],
                      ", ".join(g["skills"]))
    console.print(table)


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


@app.command()
def play(game: str = typer.Argument(..., help="game id, see `socialgym list`"),
         agents: str = typer.Option("scripted:random", help="comma-separated policy specs, one per seat "
                                    "(a single spec fills every seat)"),
         seed: int = typer.Option(0, help="episode seed"),
         config: list[str] = typer.Option([], "--config", "-c", help="game config key=value (repeatable)"),
         log: Path = typer.Option(Path("runs/play.jsonl"), help="JSONL log the episode is appended to"),
         quiet: bool = typer.Option(False, help="do not print the transcript")):
    """Play one episode, print the public transcript and the result, append the log."""
    from agents.runner import EpisodeJob, PolicyPool, play_episode
    from socialgym_env.logs import append_episode

    try:
        env = socialgym_env.make(game, **parse_config(config))
    except socialgym_env.SocialGymError as err:
        raise typer.BadParameter(str(err)) from None
    seats = [s.strip() for s in agents.split(",") if s.strip()]
    if len(seats) == 1:
        seats = seats * len(env.possible_agents)
    if len(seats) != len(env.possible_agents):
        raise typer.BadParameter(f"{game} has {len(env.possible_agents)} seats; --agents gave {len(seats)}")
    job = EpisodeJob(game, seed, seats, config=parse_config(config))
    with console.status(f"playing {game} (seed {seed})..."):
        try:
            record = play_episode(job, PolicyPool(seed=seed))
        except ValueError as err:
            raise typer.BadParameter(str(err)) from None
    append_episode(log, record)
    if not quiet:
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


def _mount_optional(name: str, module: str) -> None:
    try:
        sub = __import__(module, fromlist=["app"]).app
    except ImportError:
        return
    app.add_typer(sub, name=name)


def _mount_benchmarks() -> None:
    """tournament / leaderboard / replay live in benchmarks.cli; they join the top level."""
    try:
        from benchmarks import cli as bench
    except ImportError:  # the bench extra (scipy, matplotlib) is not installed
        return
    app.registered_commands.extend(bench.app.registered_commands)


_mount_optional("maze", "socialgym_env.socialmaze.cli")
_mount_benchmarks()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
