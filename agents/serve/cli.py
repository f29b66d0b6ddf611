"""``socialgym serve-env``: every game over OpenEnv's protocol (``socialgym.commands`` entry point)."""
from __future__ import annotations

import typer

from ..registry import PolicySpecError


def serve_env(host: str = typer.Option("127.0.0.1", help="address to bind (another needs --allow-remote)"),
              port: int = typer.Option(8000, help="TCP port"),
              allow_remote: bool = typer.Option(False, help="allow binding an address other machines can reach"),
              game: str = typer.Option("prisoners_dilemma", help="default game of a session (a reset may name another)"),
              seat: str = typer.Option("0", help="default seat: index, seat id or role"),
              opponents: str = typer.Option("scripted:heuristic", help="default opponent spec(s), comma-separated: one "
                                            "for all other seats or one per seat; model specs only from here"),
              max_sessions: int = typer.Option(1024, help="live sessions at most; one more is refused"),
              idle_timeout: float = typer.Option(300.0, help="seconds of silence after which a session is closed"),
              policy_seed: int = typer.Option(0, help="seed of the opponents' policy pool"),
              log_level: str = typer.Option("warning", help="uvicorn log level")):
    """Serve every game over OpenEnv's WebSocket/HTTP protocol: one seat per session."""
    import socialgym_env

    from .app import check_host, serve
    from .game_session import GameDefaults
    from .openenv_app import create_openenv_app

    try:
        check_host(host, allow_remote)
        socialgym_env.make(game)
        specs = tuple(s.strip() for s in opponents.split(",") if s.strip())
        defaults = GameDefaults(game=game, seat=int(seat) if seat.isdigit() else seat, opponents=specs,
                                policy_seed=policy_seed)
        app = create_openenv_app(defaults, max_sessions=max_sessions, idle_timeout_s=idle_timeout)
    except (socialgym_env.SocialGymError, PolicySpecError, ValueError) as err:
        raise typer.BadParameter(str(err)) from None
    typer.echo(f"serving Social Gym (OpenEnv protocol) on http://{host}:{port}  ws://{host}:{port}/ws  "
               f"(default game {game}, opponents {opponents}; at most {max_sessions} sessions)")
    serve(app, host=host, port=port, allow_remote=allow_remote, log_level=log_level)


def register(app: typer.Typer) -> None:
    """Add ``serve-env`` to the root app."""
    app.command("serve-env")(serve_env)
