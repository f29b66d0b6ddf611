"""The server stack every Social Gym network front end shares: app factory and launcher.

- :func:`create_app` builds a FastAPI app around a :class:`~socialgym_agents.serve.sessions.SessionStore`:
  a lifespan that runs the idle reaper and closes every session at shutdown, ``GET /health``
  with the store's counts, and JSON error answers for the store's errors.
- :func:`serve` runs an app with uvicorn, bound to 127.0.0.1 unless the caller passes another
  host *and* ``allow_remote=True`` (the CLI's ``--host`` plus ``--allow-remote``): a game server
  holds no user accounts, so exposing it is a deliberate act, never a default.
- :func:`json_response` encodes with ``default=str``, so a game's info values that JSON lacks
  (tuples are fine; sets, enums) never fail a response.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Optional

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from .sessions import CapacityError, SessionError, SessionStore

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
MAX_WS_MESSAGE_BYTES = 1 << 20          # one action is at most a few KB; refuse megabyte frames


def to_json(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


def json_response(payload: Any, status_code: int = 200) -> Response:
    return Response(to_json(payload), status_code=status_code, media_type="application/json")


def reap_interval(idle_timeout_s: Optional[float]) -> Optional[float]:
    """How often the reaper looks: a quarter of the timeout, between 0.05 s and 30 s."""
    return None if idle_timeout_s is None else min(30.0, max(0.05, idle_timeout_s / 4))


def create_app(store: SessionStore, title: str, description: str = "", version: str = "0.1.0") -> FastAPI:
    """A FastAPI app owning ``store`` (``app.state.store``; see the module docstring); callers
    include their routers."""
    app = FastAPI(title=title, description=description, version=version, lifespan=_lifespan)
    app.state.store = store
    app.add_exception_handler(CapacityError, _capacity_reached)
    app.add_exception_handler(SessionError, _session_refused)
    app.add_exception_handler(Exception, _internal_error)
    app.include_router(router)
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI):
    """The idle reaper while the app runs; every session closed at shutdown."""
    store: SessionStore = app.state.store
    interval = reap_interval(store.idle_timeout_s)

    async def reaper():
        while True:
            await asyncio.sleep(interval)
            await store.reap()

    task = asyncio.create_task(reaper()) if interval is not None else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
        await store.close_all()


async def _capacity_reached(request: Request, err: CapacityError):
    return json_response({"detail": str(err), "code": "CAPACITY_REACHED"}, 503)


async def _session_refused(request: Request, err: SessionError):
    return json_response({"detail": str(err), "code": "SESSION_ERROR"}, 401)


async def _internal_error(request: Request, err: Exception):   # a game or policy bug: one JSON line
    return json_response({"detail": f"internal error: {type(err).__name__}: {err}",
                          "code": "EXECUTION_ERROR"}, 500)


router = APIRouter()


@router.get("/health", tags=["Health"])
async def health(request: Request):
    return {"status": "healthy", **request.app.state.store.stats()}


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-local bind unless explicitly allowed (ValueError with the fix)."""
    if host not in LOCAL_HOSTS and not allow_remote:
        raise ValueError(f"--host {host} would accept connections from other machines; "
                         "pass --allow-remote as well if that is intended (default: 127.0.0.1)")


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, allow_remote: bool = False,
          log_level: str = "warning") -> None:
    """Run ``app`` with uvicorn until interrupted (see :func:`check_host`)."""
    import uvicorn

    check_host(host, allow_remote)
    uvicorn.run(app, host=host, port=port, log_level=log_level, ws_max_size=MAX_WS_MESSAGE_BYTES)


class BackgroundServer:
    """Run an app with uvicorn on a background thread, on 127.0.0.1 and a free port (tests,
    examples and benchmarks that need a live server in-process)::

        with BackgroundServer(app) as url:      # "http://127.0.0.1:<port>"
            ...
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"):
        import uvicorn

        check_host(host, allow_remote=False)
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level,
                                                    ws_max_size=MAX_WS_MESSAGE_BYTES, lifespan="on"))
        self.server.install_signal_handlers = lambda: None     # not the main thread
        self.host = host
        self.thread = None

    def __enter__(self) -> str:
        import threading
        import time

        self.thread = threading.Thread(target=self.server.run, name="socialgym-server", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://{self.host}:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
