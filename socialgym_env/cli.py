"""The ``socialgym`` command line (typer).

    socialgym list                                   the game catalogue
    socialgym rules [GAME]                           a game's complete rules (no GAME: the shared ones)
    socialgym --game-module pkg.mod COMMAND ...      first register the game defined in pkg.mod
    socialgym play GAME --agents a,b,... --seed N    play one episode, print the transcript, log it
    socialgym tournament / leaderboard / replay      (socialgym_benchmarks.cli, when installed)
    socialgym maze ...                               SocialMaze Hidden Role Deduction data sets

This module is the root of the command line and imports no upper layer: ``play`` (agents),
``tournament``/``leaderboard``/``replay`` (benchmarks) and the training commands join through the
``socialgym.commands`` entry-point group declared in setup.cfg.
"""
from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from typing import List, Optional

import typer
from rich.table import Table

import socialgym_env
from socialgym_env.cli_errors import debug_requested, invoke_typer, run_command
from socialgym_env.console import OutputConsole

app = typer.Typer(help="Social Gym: multi-agent social games for LLM agents.", no_args_is_help=True,
                  add_completion=False)
console = OutputConsole()


@app.callback()
def root(game_module: Optional[List[str]] = typer.Option(
        None, "--game-module", metavar="PKG.MOD",
        help="register the game defined in this module (its GAME, or PKG.MOD:Class) before the "
             "command runs; repeatable. Installed games (the socialgym.games entry points) need no flag."),
        debug: bool = typer.Option(False, "--debug", help="on an error, show the traceback, not one line "
                                   "(also SOCIALGYM_DEBUG=1)")):
    """Social Gym: multi-agent social games for LLM agents."""
    for reference in game_module or ():
        socialgym_env.register_game(reference, replace=True)


@app.command("rules")
def rules_cmd(game: Optional[str] = typer.Argument(None, help="game id (see `socialgym list`); "
                                                   "none: the rules every game shares")):
    """Print a game's complete rules (its module docstring, the rulebook)."""
    from .docgen import common_rules, game_rules
    typer.echo(common_rules() if game is None else game_rules(game))


ALL_COLUMNS = ("name", "category", "players", "information", "communication", "iteration", "skills")
NARROW_COLUMNS = ("players", "category", "information")
WIDE_LIST = 140        # columns of terminal the whole table needs to stay readable


@app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="print the catalogue as JSON")):
    """Print the game catalogue."""
    games = socialgym_env.list_games()
    if as_json:
        typer.echo(json.dumps(games, indent=2, ensure_ascii=False))
        return
    # The id is what a user types: never cut or wrapped. A narrow terminal gets fewer columns
    # rather than every one cut to a few letters.
    columns = ALL_COLUMNS if console.width >= WIDE_LIST else NARROW_COLUMNS
    table = Table(title=f"Social Gym games ({len(games)})",
                  caption=None if columns is ALL_COLUMNS else "a wider terminal or --json shows every column")
    table.add_column("id", no_wrap=True, min_width=max(len(g["id"]) for g in games))
    for column in columns:
        table.add_column(column, overflow="fold")
    for g in games:
        cells = {"name": g["name"], "category": g["category"] + (" (coop)" if g["cooperative"] else ""),
                 "players": str(g["num_players"]), "information": g["information"],
                 "communication": g["communication"], "iteration": g["iteration"], "skills": ", ".join(g["skills"])}
        table.add_row(g["id"], *(cells[c] for c in columns))
    console.print(table)


def _mount_maze() -> None:
    from .socialmaze.cli import app as maze_app
    app.add_typer(maze_app, name="maze")


# Command groups that upper layers (agents, benchmarks, training) contribute: each entry point
# names a ``register(app)`` function. Loading them by entry point, not by import, keeps the engine
# free of any dependency on the layers above it (the way pytest and flask find plugins).
COMMAND_GROUP = "socialgym.commands"
unavailable: dict[str, str] = {}      # entry-point name -> why it could not be loaded


def _load_plugins() -> None:
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        try:
            register = entry.load()
        except ModuleNotFoundError as err:
            # A missing optional dependency: name the extra that brings it. Any other error
            # (a bug in the plugin) propagates below, never swallowed into "No such command".
            if err.name and err.name.split(".")[0] in ("socialgym_env", "socialgym_agents", "socialgym_benchmarks", "socialgym_training"):
                raise
            extra = ",".join(entry.extras) or "all"
            unavailable[entry.name] = (f"needs the '{extra}' extra (pip install 'socialgym[{extra}]'): "
                                       f"module {err.name!r} is not installed")
            continue
        register(app)


def _explain_unknown_command(argv: list[str]) -> None:
    """Before typer says "No such command", say which command groups failed to load and why."""
    known = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted and wanted not in known and unavailable:
        for name, why in unavailable.items():
            typer.echo(f"socialgym: the {name!r} commands are unavailable: {why}", err=True)


_mount_maze()
_load_plugins()


def main(argv: Optional[list] = None) -> None:
    """The ``socialgym`` console script: errors become one line and an exit code
    (socialgym_env.cli_errors: 1 failed or a bug, 2 bad input, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    _explain_unknown_command(argv)
    raise SystemExit(run_command(lambda: invoke_typer(app, argv, "socialgym"), "socialgym", debug=debug))


if __name__ == "__main__":
    main()
