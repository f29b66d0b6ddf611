"""The server stack every Social Gym network front end shares: app factory and launcher.

- :func:`create_app` builds a FastAPI app around a :class:`~socialgym_agents.serve.sessions.SessionStore`:
  a lifespan that runs the idle reaper and closes every session at shutdown, ``GET /health``
  with the store's counts, and JSON error answers for the store's errors.
- :func:`serve` runs an app with uvicorn, bound to 127.0.0.1 unless the caller passes another
  host *and* ``allow_remote=True`` (the CLI's ``--host`` plus ``--allow-remote``): a game server
  holds no user accounts, so exposing it is a deliberate act, never a default.
- :func:`json_response` encodes with ``default=str``, so a game's info values that JSON lacks
  (tuples are fine; sets, enums) never fail a response.
- :class:`ServerLimits` bound what one client may make the server hold or read, before any
  handler runs: a request body over ``max_body_bytes`` is answered 413 unread
  (:class:`BodyLimit`, a middleware on every route), a request whose headers or body do not arrive
  within ``handshake_timeout_s`` is dropped (:func:`guarded_http_protocol`, given to uvicorn), and
  a WebSocket whose first message is a greeting (the arena's ``hello``) must send it within
  ``handshake_timeout_s`` while at most ``max_handshakes`` wait (:class:`Handshakes`; past that the
  oldest that has stalled is shed, :class:`WaitingRoom`, so clients that speak at once keep getting
  through, all together too, while idle ones are shed).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Callable, Optional

from fastapi import APIRouter, FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from socialgym_env.actions import safe_repr

from .limits import ServerLimits
from .sessions import CapacityError, SessionError, SessionStore

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")



def uvicorn_options(app) -> dict:
    """Settings for uvicorn.Config under the app's limits (the defaults for an app that
    :func:`create_app` did not build): WebSocket frames capped like HTTP bodies, requests that
    never finish arriving dropped."""
    limits = getattr(app.state, "limits", None) or ServerLimits()
    return {"ws_max_size": limits.max_body_bytes, "http": guarded_http_protocol(limits)}


def to_json(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


def json_response(payload: Any, status_code: int = 200) -> Response:
    return Response(to_json(payload), status_code=status_code, media_type="application/json")


def reap_interval(idle_timeout_s: Optional[float]) -> Optional[float]:
    """How often the reaper looks: a quarter of the timeout, between 0.05 s and 30 s."""
    return None if idle_timeout_s is None else min(30.0, max(0.05, idle_timeout_s / 4))


def parse_json(raw: str) -> Any:
    """A client's JSON text -> its value; ValueError with one short line for anything ``json``
    cannot read, nesting deeper than its stack included (a RecursionError would otherwise pass
    for a dropped connection)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def validation_errors(errors: list, limit: int = 10) -> list:
    """Pydantic's error list without what the client sent (``input``: up to a megabyte) and with
    short locations, so a refusal never echoes a huge value or key back."""
    return [{"type": e.get("type"), "msg": e.get("msg"),
             "loc": [part if isinstance(part, int) else safe_repr(part, 60).strip("'") for part in e.get("loc", ())]}
            for e in errors[:limit]]


def create_app(store: SessionStore, title: str, description: str = "", version: str = "0.1.0",
               limits: Optional[ServerLimits] = None) -> FastAPI:
    """A FastAPI app owning ``store`` (``app.state.store``) under ``limits`` (``app.state.limits``,
    ``app.state.handshakes``; see the module docstring); callers include their routers."""
    limits = limits or ServerLimits()
    app = FastAPI(title=title, description=description, version=version, lifespan=_lifespan)
    app.state.store = store
    app.state.limits = limits
    app.state.handshakes = Handshakes(limits)
    app.state.reapers = []             # more async checks the idle reaper runs each time it looks
    app.add_middleware(BodyLimit, limits=limits)
    app.add_exception_handler(CapacityError, _capacity_reached)
    app.add_exception_handler(SessionError, _session_refused)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _internal_error)
    app.include_router(router)
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI):
    """The idle reaper while the app runs (and ``app.state.reapers``, each time it looks); every
    session closed at shutdown."""
    store: SessionStore = app.state.store
    interval = reap_interval(store.idle_timeout_s)

    async def reaper():
        while True:
            await asyncio.sleep(interval)
            await store.reap()
            for more in app.state.reapers:
                await more()

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


async def _invalid_request(request: Request, err: RequestValidationError):
    return json_response({"detail": validation_errors(err.errors()), "code": "VALIDATION_ERROR"}, 422)


async def _internal_error(request: Request, err: Exception):   # a game or policy bug: one JSON line
    return json_response({"detail": f"internal error: {type(err).__name__}: {err}",
                          "code": "EXECUTION_ERROR"}, 500)


router = APIRouter()


@router.get("/health", tags=["Health"])
async def health(request: Request):
    return {"status": "healthy", **request.app.state.store.stats(),
            "waiting_handshakes": len(request.app.state.handshakes)}


class BodyLimit:
    """ASGI middleware: read an HTTP request's body before the app does, at most
    ``limits.max_body_bytes`` of it and within ``limits.handshake_timeout_s``; a larger declared
    ``Content-Length`` is answered 413 before reading a byte, a larger streamed body 413 as soon
    as it passes the limit, a body that stops arriving 408. The app then gets the body whole."""

    def __init__(self, app, limits: ServerLimits):
        self.app, self.limits = app, limits

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limits.max_body_bytes
        too_large = f"the request body is over {limit} bytes (the server's --max-body-bytes)"
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > limit:
            return await _refuse(send, 413, too_large, "PAYLOAD_TOO_LARGE")
        chunks, size = [], 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.handshake_timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                return await _refuse(send, 408, f"the request body did not arrive within "
                                     f"{self.limits.handshake_timeout_s:g} s", "REQUEST_TIMEOUT")
            if message["type"] != "http.request":          # the client went away
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                return await _refuse(send, 413, too_large, "PAYLOAD_TOO_LARGE")
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()                     # a later read waits for the disconnect
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


async def _refuse(send, status: int, detail: str, code: str) -> None:
    """Answer before the body is read; ``connection: close`` since the rest of it is never read."""
    body = to_json({"detail": detail, "code": code}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class WaitingRoom:
    """Connections waiting for their first request or message, oldest first. Past ``limit`` of
    them, the oldest that have waited ``stall_s`` are shed (stalled: a client that sends at once
    has been read by then); fresher ones are let in and looked at again once they have waited
    that long. A burst of honest clients is never shed for arriving together (once, 192 WebSocket
    clients at once lost 128, the cap's surplus, their requests unread), and silent ones are held
    at most ``stall_s`` past the cap."""

    def __init__(self, limit: int, stall_s: float, still_waiting: Callable = lambda key: True,
                 unread: Callable = lambda key: False):
        self.limit, self.stall_s, self.still_waiting, self.unread = limit, stall_s, still_waiting, unread
        self._since: dict = {}            # key -> (loop time it began waiting, shed it); oldest first
        self._recheck = None

    def __len__(self) -> int:
        return len(self._since)

    def add(self, key, shed: Callable[[], None]) -> None:
        """``key`` waits from now; ``shed()`` closes it if it stalls past the cap."""
        self._since[key] = (asyncio.get_running_loop().time(), shed)
        self._shed_stalled()

    def discard(self, key) -> None:
        self._since.pop(key, None)

    def _recheck_now(self) -> None:
        self._recheck = None
        self._shed_stalled()

    def _shed_stalled(self) -> None:
        for key in [k for k in self._since if not self.still_waiting(k)]:
            del self._since[key]
        loop = asyncio.get_running_loop()
        now, over = loop.time(), len(self._since) - self.limit
        due = now + self.stall_s / 4               # a look again soon at requests waiting unread
        for key, (since, shed) in list(self._since.items()):
            if over <= 0:
                return
            if now - since < self.stall_s:              # this one is fresh: so is every later one
                due = min(due, since + self.stall_s)
                break
            if self.unread(key):          # its request waits unread: the server is behind, not the client
                continue
            del self._since[key]
            shed()
            over -= 1
        if over > 0 and self._recheck is None:
            self._recheck = loop.call_at(due, self._recheck_now)


class Handshakes:
    """Accepted WebSockets that have not sent their first message (a ``hello``, a ``reset``):
    each waits at most ``handshake_timeout_s``; past ``max_handshakes`` waiting, the oldest that
    has stalled is closed (:class:`WaitingRoom`: a flood of silent sockets never locks out a
    page that greets at once)."""

    def __init__(self, limits: ServerLimits):
        self.limits = limits
        self._waiting = WaitingRoom(limits.max_handshakes, limits.stall_s)

    def __len__(self) -> int:
        return len(self._waiting)

    async def first_message(self, ws: WebSocket) -> Optional[str]:
        """The first text frame of the accepted ``ws``, or None once the socket is closed (it
        went away, sent bytes, waited too long, or was evicted: stalled past the cap)."""
        evicted = asyncio.get_running_loop().create_future()
        receive = asyncio.ensure_future(ws.receive_text())
        self._waiting.add(ws, lambda: evicted.done() or evicted.set_result(None))
        try:
            done, _ = await asyncio.wait({receive, evicted}, timeout=self.limits.handshake_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiting.discard(ws)
            if not receive.done():
                receive.cancel()
        if receive in done:
            try:
                return receive.result()
            except (WebSocketDisconnect, RuntimeError, KeyError):    # KeyError: a bytes frame
                return None
        reason = ("too many connections are waiting to say who they are; retry" if evicted.done()
                  else f"no first message within {self.limits.handshake_timeout_s:g} s")
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            await ws.close(code=1013 if evicted.done() else 1008, reason=reason)
        return None


def unread_bytes(transport) -> int:
    """Bytes that arrived on ``transport``'s socket and wait in the kernel for the server to read
    (0 where that cannot be asked): a client whose request is there has sent it, however long a
    busy event loop takes to get to it."""
    try:
        import fcntl
        import struct
        import termios
        fileno = transport.get_extra_info("socket").fileno()
        return struct.unpack("i", fcntl.ioctl(fileno, termios.FIONREAD, b"\0\0\0\0"))[0]
    except (ImportError, AttributeError, OSError, ValueError):
        return 0


def guarded_http_protocol(limits: ServerLimits) -> type:
    """uvicorn's h11 protocol, plus: a connection must finish sending a request's headers within
    ``limits.handshake_timeout_s`` of opening (or of its last response), and at most
    ``limits.max_handshakes`` connections wait for their headers, past that the oldest stalled
    one dropped (:class:`WaitingRoom`).
    uvicorn itself bounds only idle keep-alive connections, so half-sent requests would be
    held forever."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting = WaitingRoom(limits.max_handshakes, limits.stall_s,
                          still_waiting=lambda protocol: protocol._waiting_since_armed(),
                          unread=lambda protocol: unread_bytes(protocol.transport) > 0)

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._await_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_request()

        def connection_lost(self, exc) -> None:
            waiting.discard(self)
            super().connection_lost(exc)

        def _waiting_since_armed(self) -> bool:
            return (self.transport.get_protocol() is self and not self.transport.is_closing()
                    and self.cycle is self._armed_cycle and (self.cycle is None or self.cycle.response_complete))

        def _await_request(self) -> None:
            if self.transport.is_closing():
                return
            self._armed_cycle = self.cycle
            self.loop.call_later(limits.handshake_timeout_s, self._drop_if_still_waiting, self.cycle)
            waiting.discard(self)               # a keep-alive connection waits again: from now
            waiting.add(self, self._drop)

        def _drop_if_still_waiting(self, armed_cycle) -> None:
            if armed_cycle is self._armed_cycle and self._waiting_since_armed():
                self._drop()

        def _drop(self) -> None:
            waiting.discard(self)
            self.transport.close()

    return GuardedH11Protocol


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-local bind unless explicitly allowed (ValueError with the fix)."""
    if host not in LOCAL_HOSTS and not allow_remote:
        raise ValueError(f"--host {host} would accept connections from other machines; "
                         "pass --allow-remote as well if that is intended (default: 127.0.0.1)")


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, allow_remote: bool = False,
          log_level: str = "warning") -> None:
    """Run ``app`` with uvicorn until interrupted, under its limits (see :func:`check_host`,
    :class:`ServerLimits`)."""
    import uvicorn

    check_host(host, allow_remote)
    uvicorn.run(app, host=host, port=port, log_level=log_level, **uvicorn_options(app))


class BackgroundServer:
    """Run an app with uvicorn on a background thread, on 127.0.0.1 and a free port (tests,
    examples and benchmarks that need a live server in-process)::

        with BackgroundServer(app) as url:      # "http://127.0.0.1:<port>"
            ...
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"):
        import uvicorn

        check_host(host, allow_remote=False)
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                                                    **uvicorn_options(app)))
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
