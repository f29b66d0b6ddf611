"""``socialgym serve-env`` (every game over OpenEnv's protocol) and ``socialgym arena`` (people
play in the browser): the serve extra's commands (``socialgym.commands`` entry point)."""
from __future__ import annotations

from pathlib import Path

import typer

from ..registry import PolicySpecError
from ..specs import parse_specs
from .limits import ServerLimits

# Both servers' connection limits (what they mean: socialgym_agents.serve.limits).
_LIMITS = ServerLimits()
MAX_BODY_BYTES = typer.Option(_LIMITS.max_body_bytes, help="largest HTTP request body or WebSocket frame, "
                              "in bytes (413 above)")
HANDSHAKE_TIMEOUT = typer.Option(_LIMITS.handshake_timeout_s, help="seconds a connection has to send its "
                                 "request, or a WebSocket its first message, before it is closed")
MAX_HANDSHAKES = typer.Option(_LIMITS.max_handshakes, help="connections that may wait that long at once "
                              "(WebSockets and HTTP each); past that, the oldest that has stalled is closed")


def server_limits(max_body_bytes: int, handshake_timeout: float, max_handshakes: int) -> ServerLimits:
    return ServerLimits(max_body_bytes=max_body_bytes, handshake_timeout_s=handshake_timeout,
                        max_handshakes=max_handshakes)

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")     # uvicorn's


def _check_listen(host: str, port: int, log_level: str) -> None:
    """Before serving: a log level uvicorn knows, and a port that is free (else one line and
    exit 2, not uvicorn's own startup line and exit 3)."""
    import socket
    if log_level not in LOG_LEVELS:
        raise typer.BadParameter(f"{log_level[:40]!r} is not one of {', '.join(LOG_LEVELS)}", param_hint="--log-level")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as uvicorn binds
            probe.bind(address)
    except OSError as err:
        raise typer.BadParameter(f"cannot listen on {host}:{port} ({err.strerror or err}); is another "
                                 f"server using it? choose another --port", param_hint="--port") from None


# What both game servers (serve-env, serve-ors) take: where to listen and a session's defaults.
HOST = typer.Option("127.0.0.1", help="address to bind (another needs --allow-remote)")
ALLOW_REMOTE = typer.Option(False, help="allow binding an address other machines can reach")
GAME = typer.Option("prisoners_dilemma", help="default game of a session (a reset or task may name another)")
SEAT = typer.Option("0", help="default seat: index, seat id or role")
OPPONENTS = typer.Option("scripted:heuristic", help="default opponent spec(s), comma-separated: one for all other "
                         "seats or one per seat; model specs only from here")
POLICY_SEED = typer.Option(0, help="seed of the opponents' policy pool")
LOG_LEVEL = typer.Option("warning", help="uvicorn log level")


def game_defaults(game: str, seat: str, opponents: str, policy_seed: int):
    """A session's defaults from the command line (SocialGymError, PolicySpecError, ValueError if bad)."""
    import socialgym_env

    from .game_session import GameDefaults
    socialgym_env.make(game)
    return GameDefaults(game=game, seat=int(seat) if seat.isdigit() else seat, opponents=parse_specs(opponents),
                        policy_seed=policy_seed)


def serve_env(host: str = HOST, port: int = typer.Option(8000, min=1, max=65535, help="TCP port"),
              allow_remote: bool = ALLOW_REMOTE, game: str = GAME, seat: str = SEAT, opponents: str = OPPONENTS,
              max_sessions: int = typer.Option(1024, help="live sessions at most; one more is refused"),
              idle_timeout: float = typer.Option(300.0, help="seconds of silence after which a session is closed"),
              policy_seed: int = POLICY_SEED, log_level: str = LOG_LEVEL,
              max_body_bytes: int = MAX_BODY_BYTES, handshake_timeout: float = HANDSHAKE_TIMEOUT,
              max_handshakes: int = MAX_HANDSHAKES):
    """Serve every game over OpenEnv's WebSocket/HTTP protocol: one seat (or several) per session."""
    import socialgym_env

    from .app import check_host, serve
    from .openenv_app import create_openenv_app

    try:
        check_host(host, allow_remote)
        defaults = game_defaults(game, seat, opponents, policy_seed)
        app = create_openenv_app(defaults, max_sessions=max_sessions, idle_timeout_s=idle_timeout,
                                 limits=server_limits(max_body_bytes, handshake_timeout, max_handshakes))
    except (socialgym_env.SocialGymError, PolicySpecError, ValueError) as err:
        raise typer.BadParameter(str(err)) from None
    _check_listen(host, port, log_level)
    typer.echo(f"serving Social Gym (OpenEnv protocol) on http://{host}:{port}  ws://{host}:{port}/ws  "
               f"(default game {game}, opponents {opponents}; at most {max_sessions} sessions)")
    serve(app, host=host, port=port, allow_remote=allow_remote, log_level=log_level)


def serve_ors(host: str = HOST, port: int = typer.Option(8080, min=1, max=65535, help="TCP port"),
              allow_remote: bool = ALLOW_REMOTE, game: str = GAME, seat: str = SEAT, opponents: str = OPPONENTS,
              policy_seed: int = POLICY_SEED, log_level: str = LOG_LEVEL):
    """Serve every game over the Open Reward Standard (ORS): environment `socialgym`, splits train and
    test, the `move` tool (docs/integrations/publishing.md)."""
    import socialgym_env

    from .app import check_host, serve
    try:
        from .ors_app import create_ors_app
    except ImportError as err:
        typer.echo(f"error: serve-ors needs the ors extra (pip install 'socialgym[ors]'): {err}", err=True)
        raise typer.Exit(2)
    try:
        check_host(host, allow_remote)
        app = create_ors_app(game_defaults(game, seat, opponents, policy_seed))
    except (socialgym_env.SocialGymError, PolicySpecError, ValueError) as err:
        raise typer.BadParameter(str(err)) from None
    _check_listen(host, port, log_level)
    typer.echo(f"serving Social Gym (Open Reward Standard) on http://{host}:{port}  (environment socialgym; "
               f"default game {game}, opponents {opponents})")
    serve(app, host=host, port=port, allow_remote=allow_remote, log_level=log_level)


def arena(host: str = typer.Option("127.0.0.1", help="address to bind (another needs --allow-remote)"),
          port: int = typer.Option(8080, min=1, max=65535, help="TCP port"),
          allow_remote: bool = typer.Option(False, help="allow binding an address other machines can reach"),
          models: str = typer.Option("smollm2", help="model specs the lobby may seat, comma-separated (smollm2, "
                                     "hf:..., openai:...; empty: none); scripted specs are always offered"),
          log_dir: Path = typer.Option(Path("runs/arena"), help="folder of arena.jsonl (finished games) and of "
                                       "the episodes the lobby offers to replay"),
          max_games: int = typer.Option(64, help="live games at most; one more is refused"),
          idle_timeout: float = typer.Option(1800.0, help="seconds of silence after which a game is closed "
                                             "(logged as failed if unfinished)"),
          abandon_after: float = typer.Option(600.0, min=1.0, max=1e6,     # arena.ABANDON_AFTER_S
                                              help="seconds a game may wait with no page holding any of its "
                                              "human seats before it is closed (logged as abandoned)"),
          policy_seed: int = typer.Option(0, help="seed of the model and scripted seats' policy pool"),
          log_level: str = typer.Option("warning", help="uvicorn log level"),
          max_body_bytes: int = MAX_BODY_BYTES, handshake_timeout: float = HANDSHAKE_TIMEOUT,
          max_handshakes: int = MAX_HANDSHAKES):
    """Play any game in the browser against people and policies; finished games are logged for
    `socialgym leaderboard <log-dir>` (people as human:<name>)."""
    from socialgym_env.cli_errors import check_output_folder

    from .app import check_host, serve
    from .arena import create_arena_app

    check_output_folder(log_dir, "--log-dir")       # before serving: finished games must have a place
    try:
        check_host(host, allow_remote)
        specs = parse_specs(models) if models.strip() else []
        app = create_arena_app(log_dir, models=specs, max_games=max_games, idle_timeout_s=idle_timeout,
                               policy_seed=policy_seed, abandon_after_s=abandon_after,
                               limits=server_limits(max_body_bytes, handshake_timeout, max_handshakes))
    except (PolicySpecError, ValueError) as err:
        raise typer.BadParameter(str(err)) from None
    _check_listen(host, port, log_level)
    typer.echo(f"Social Gym arena on http://{host}:{port}/  (models: {', '.join(map(str, specs)) or 'none'}; "
               f"logs: {log_dir / 'arena.jsonl'})")
    serve(app, host=host, port=port, allow_remote=allow_remote, log_level=log_level)


def register(app: typer.Typer) -> None:
    """Add ``serve-env``, ``serve-ors`` and ``arena`` to the root app."""
    app.command("serve-env")(serve_env)
    app.command("serve-ors")(serve_ors)
    app.command("arena")(arena)
