"""Every Social Gym game over OpenEnv's wire protocol (openenv-core 0.3: WebSocket and HTTP).

```python
from openenv.core.generic_client import GenericEnvClient   # OpenEnv's own client

async with GenericEnvClient(base_url="http://127.0.0.1:8000") as env:
    result = await env.reset(seed=7, game="liars_dice", seat=0, opponents="scripted:heuristic")
    while not result.done:
        result = await env.step({"message": result.observation["legal_actions"][0]})
```

**WebSocket ``/ws``** (what OpenEnv's ``EnvClient`` speaks): one connection is one session with
its own game. The client sends ``{"type": "reset", "data": {...}}``, ``{"type": "step", "data":
<action>}``, ``{"type": "state"}`` or ``{"type": "close"}``; the server answers
``{"type": "observation", "data": {"observation": {...}, "reward": r, "done": d}}``,
``{"type": "state", "data": {...}}`` or ``{"type": "error", "data": {"message", "code"}}``
with OpenEnv's codes (``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``,
``EXECUTION_ERROR``, ``CAPACITY_REACHED``). The connection itself is the session's credential:
no other connection can reach it. A socket is a session from the moment it connects (OpenEnv's
client connects before its first reset, often long before): it counts against
``max_sessions`` and a silent one is closed after the idle timeout, so there is no separate
handshake to wait for, unlike the arena's ``hello``. Closing the socket, or a disconnect mid-episode, frees the
session at once.

**Reconnecting after the idle timeout.** A learner may think longer than the idle timeout (a
CPU training step). A socket silent that long is closed (code 1001, the reason says how to
resume), but a session in the middle of an episode is *parked*, not freed, for one more
timeout: every reset's observation carries ``session = {"id", "token"}``, and a client that
reconnects and sends ``reset`` with ``{"session_id", "session_token"}`` takes the same episode up
where it was (the reply is the seat's current observation; OpenEnv's client reconnects by itself
after ``await client.disconnect()``). Past that, or with a session that is gone for another
reason, the reply is one error saying why (``session ... was closed after 300 s idle and 300 s
more unclaimed; its episode is gone: reset without session_id to start a new one``); the reason
is told only to a caller holding the session's token.

**Several seats in one session** (reset option ``seats``, e.g. ``[0, 2]``): the session plays
those seats (self-play), the others are played by ``opponents``; each observation is the view of
the played seat to act now (``observation.seat``), exactly as that seat alone sees it, and the
end's ``info.rewards_by_seat`` holds each played seat's rule-decided reward. The reset's
``observation.session.seat_tokens`` holds a secret per seat: over HTTP, a caller given one seat's
token (``seat`` and ``seat_token`` instead of ``session_token``) reads only that seat's view
(``GET /state``: the observation, ``your_turn``, its reward at the end) and moves only for it,
only on its turn (``POST /step`` answers that seat's view after the move, never the next
seat's), so each seat's observation stays private to its own caller. A reset of the session to
other seats (or to one ``seat``) revokes every seat token of the old layout (401); a reset to the
same seats keeps them.

**HTTP** (``POST /reset``, ``POST /step``, ``GET /state``, as OpenEnv's server defines them):
OpenEnv's HTTP endpoints build a fresh env per request, which cannot play a game across steps,
so here ``/reset`` opens a session and returns its id and secret token inside the observation
(``observation.session = {"id", "token"}``); ``/step`` and ``/state`` take them back
(``session_id``, ``session_token``: extra fields of OpenEnv's ``StepRequest``, or query
parameters of ``/state``); ``POST /close`` ends one. Without a session, ``/state`` answers the
empty state, as OpenEnv's would for a fresh env.

``GET /health``, ``/metadata``, ``/schema`` (action, observation and state JSON schemas) as in
OpenEnv, and its JSON-RPC ``POST /mcp`` (no tools: ``tools/list`` is empty); ``GET /games`` lists the catalogue. Reset options and what an observation holds:
:mod:`socialgym_agents.serve.game_session`.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Annotated, Any, Optional

from fastapi import APIRouter, Body, Depends, FastAPI, WebSocket, WebSocketDisconnect
from fastapi.requests import HTTPConnection, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import socialgym_env
from socialgym_env.actions import safe_repr

from ..jobs import PolicyPool
from ..registry import check_spec, policy_kind
from .app import create_app, json_response, parse_json, to_json, validation_errors
from .game_session import MAX_ACTION_CHARS, BadRequest, GameDefaults, GameSession
from .limits import ServerLimits
from .sessions import CapacityError, SessionError, SessionStore

logger = logging.getLogger(__name__)


class GameAction(BaseModel):
    """One move: the text (or JSON) a policy would answer, parsed by the game's own parser."""

    model_config = ConfigDict(extra="forbid")
    message: str = Field(..., max_length=MAX_ACTION_CHARS,
                         description='the move, e.g. "defect" or {"action_type": "bid", "argument": "3 4"}')
    metadata: dict[str, Any] = Field(default_factory=dict)


class GameObservation(BaseModel):
    """The seat's own view after a reset or step (serialized as OpenEnv does: done, reward outside)."""

    text: str = Field(..., description="the seat's prompt-ready view: rules, status, what it has seen, what to do")
    game: str
    seat: str = Field(..., description="the seat this session plays")
    seed: int
    episode_id: str
    legal_actions: Optional[list[str]] = Field(None, description="the legal moves when the list is finite")
    truncated: bool = Field(False, description="done because the engine's turn cap ended the game, not its rules")
    info: dict[str, Any] = Field(default_factory=dict, description="the seat's decision view (phase, "
                                 "action_schema, new_messages, ...; score/outcome/reward at the end)")
    done: bool = False
    reward: Optional[float] = None


class GameState(BaseModel):
    episode_id: Optional[str] = None
    step_count: int = 0
    client_episode_id: Optional[str] = None
    game: Optional[str] = None
    seat: Optional[str] = None
    seats: Optional[list[str]] = None
    seed: Optional[int] = None
    opponents: Optional[list[str]] = None
    done: bool = False


def _error(message: str, code: str, **extra) -> str:
    return to_json({"type": "error", "data": {"message": message, "code": code, **extra}})


@dataclass
class EnvServer:
    """What every handler of one env server shares (``app.state.env_server``)."""

    defaults: GameDefaults
    store: SessionStore
    pool: PolicyPool          # one pool for every session: a model opponent loads once

    def new_game(self) -> GameSession:
        return GameSession(self.defaults, self.pool)


def _env_server(connection: HTTPConnection) -> EnvServer:
    return connection.app.state.env_server


Server = Annotated[EnvServer, Depends(_env_server)]
router = APIRouter()


def create_openenv_app(defaults: Optional[GameDefaults] = None, max_sessions: int = 1024,
                       idle_timeout_s: Optional[float] = 300.0, limits: Optional[ServerLimits] = None) -> FastAPI:
    """The OpenEnv-protocol app (see the module docstring); ``defaults`` apply to every reset,
    ``limits`` to every connection."""
    defaults = defaults or GameDefaults()
    kinds = [policy_kind(spec) for spec in defaults.opponents]
    for spec in defaults.opponents:                    # a bad operator default fails at start-up
        check_spec(spec)
    scripted = all(kind.scripted for kind in kinds)
    if scripted:
        try:                                           # seat and opponent count too (cheap: no model)
            GameSession(defaults).check_defaults()
        except BadRequest as err:
            raise ValueError(str(err)) from None
    # Scripted opponents answer in microseconds: play them on the event loop itself (a thread
    # hop per request costs more than the move). A model (or a person) takes seconds: the worker thread.
    store = SessionStore(max_sessions=max_sessions, idle_timeout_s=idle_timeout_s, worker_thread=not scripted)
    app = create_app(store, title="Social Gym env server (OpenEnv protocol)",
                     description="Every Social Gym game, one seat (or several) per session, over OpenEnv's "
                                 "HTTP and WebSocket API.",
                     limits=limits)
    app.state.env_server = EnvServer(defaults, store, PolicyPool(seed=defaults.policy_seed))
    app.include_router(router)
    return app


# ---------------------------------------------------------------------- HTTP
@router.get("/metadata", tags=["Environment Info"])
async def metadata():
    return {"name": "socialgym", "description": "Multi-agent social games with rule-decided rewards; "
            "one seat (or several) per session, the other seats played by scripted or model policies.",
            "readme_content": None, "version": "0.1.0", "author": "Social Gym", "documentation_url": None}


@router.get("/schema", tags=["Schema"])
async def schema():
    return {"action": GameAction.model_json_schema(), "observation": GameObservation.model_json_schema(),
            "state": GameState.model_json_schema()}


# JSON-RPC 2.0's codes for what /mcp refuses.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601


@router.post("/mcp", tags=["MCP"])
async def mcp(request: Request):
    """OpenEnv's MCP endpoint (JSON-RPC 2.0), which ``openenv validate`` requires: this server
    exposes no MCP tools (a game is played through reset/step), so ``tools/list`` answers an
    empty list and every other method "method not found"."""
    try:
        call = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        return _rpc_error(None, PARSE_ERROR, "parse error")
    if not isinstance(call, dict) or call.get("jsonrpc") != "2.0" or not isinstance(call.get("method"), str):
        return _rpc_error(call.get("id") if isinstance(call, dict) else None, INVALID_REQUEST,
                          'invalid request: a JSON-RPC 2.0 object with "method"')
    if call["method"] == "tools/list":
        return {"jsonrpc": "2.0", "id": call.get("id"), "result": {"tools": []}}
    return _rpc_error(call.get("id"), METHOD_NOT_FOUND, f"method not found: {safe_repr(call['method'], 60)}")


def _rpc_error(call_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": call_id, "error": {"code": code, "message": message}}


@router.get("/games", tags=["Environment Info"])
async def games():
    return [{"id": g["id"], "name": g["name"], "num_players": g["num_players"]} for g in socialgym_env.list_games()]


@router.post("/reset", tags=["Environment Control"])
async def reset(server: Server, body: dict = Body(default_factory=dict)):
    if not isinstance(body, dict):
        return json_response({"detail": "the reset body is a JSON object"}, 422)
    store = server.store
    options = dict(body)
    session_id, token = options.pop("session_id", None), options.pop("session_token", None)
    session = store.get(session_id, token) if session_id is not None else await store.create(server.new_game)
    try:
        result = await store.run(session, lambda: session.value.reset(**options))
    except BadRequest as err:
        _reseat(session)                           # a failed rebuild may have dropped the old seats
        if session_id is None:                     # a session opened for a bad request is not kept
            await store.close(session)
        return json_response({"detail": str(err)}, 400)
    session.touch()
    result["observation"]["session"] = _session_keys(session)
    return json_response(result)


def _reseat(session) -> None:
    """Seat tokens for the seats the session's game plays now: a reset to other seats (or to one
    seat) revokes every token of the old layout."""
    session.reseat(getattr(session.value.env, "seats", None) or ())


def _session_keys(session) -> dict:
    """What a reset answers about its session: id and token and, when it plays several seats,
    a token per seat (hand each to that seat's caller: it reads and moves for that seat only)."""
    _reseat(session)
    keys = {"id": session.id, "token": session.token}
    if session.seat_tokens:
        keys["seat_tokens"] = dict(session.seat_tokens)
    return keys


def _caller(store: SessionStore, session_id, token, seat, seat_token):
    """(session, the seat the caller may act for: None = every seat of the session)."""
    if seat is not None:
        return store.get(session_id, seat_token, seat=seat), seat
    return store.get(session_id, token), None


@router.post("/step", tags=["Environment Control"])
async def step(server: Server, body: dict = Body(...)):
    session, seat = _caller(server.store, body.get("session_id"), body.get("session_token"), body.get("seat"),
                            body.get("seat_token"))
    try:
        action = GameAction.model_validate(body.get("action"))
    except ValidationError as err:
        return json_response({"detail": validation_errors(err.errors())}, 422)
    try:
        if seat is not None:
            result = await server.store.run(session, session.value.step_as, seat, action.model_dump())
        else:
            result = await server.store.run(session, session.value.step, action.model_dump())
    except BadRequest as err:
        return json_response({"detail": str(err)}, 400)
    session.touch(step=True)
    return json_response(result)


@router.get("/state", tags=["State Management"])
async def state(server: Server, session_id: Optional[str] = None, session_token: Optional[str] = None,
                seat: Optional[str] = None, seat_token: Optional[str] = None):
    """The session's state; with ``seat`` and ``seat_token``, that seat's own current view
    (observation, ``your_turn``, its reward at the end) instead."""
    if session_id is None:
        return GameState().model_dump()
    session, seat = _caller(server.store, session_id, session_token, seat, seat_token)
    session.touch()
    if seat is not None:
        try:
            return json_response(await server.store.run(session, session.value.seat_view, seat))
        except BadRequest as err:
            return json_response({"detail": str(err)}, 400)
    return json_response(session.value.state())


@router.post("/close", tags=["Environment Control"])
async def close(server: Server, body: dict = Body(...)):
    await server.store.close(server.store.get(body.get("session_id"), body.get("session_token")))
    return {"closed": True}


# ---------------------------------------------------------------------- WebSocket
@router.websocket("/ws")
async def websocket(ws: WebSocket, server: Server):
    await ws.accept()
    store = server.store
    try:
        session = await store.create(server.new_game)
    except CapacityError as err:
        await ws.send_text(_error(str(err), "CAPACITY_REACHED", active_sessions=err.active,
                                  max_sessions=err.limit))
        await ws.close()
        return

    async def hang_up():                           # the reaper closing (or parking) an idle session
        timeout = store.idle_timeout_s
        await ws.close(code=1001, reason=f"idle {timeout:g} s; resume: reset with session_id, session_token "
                                         f"within {timeout:g} s")

    try:
        while True:
            # An idle hang-up parks a session mid-episode for a reconnect (nothing else to resume)
            last = session.value.last
            session.resumable = last is not None and not last["done"]
            if hang_up not in session.on_close:
                session.on_close.append(hang_up)
            reply, now_serving = await _answer(store, session, await ws.receive_text())
            if now_serving is not session:         # a resumed session: this socket serves it now
                session.on_close.remove(hang_up)
                await store.close(session, "was replaced by the session its client resumed")
                session = now_serving
                await ws.send_text(reply)
                continue
            if reply is None:
                break
            await ws.send_text(reply)
    except (WebSocketDisconnect, RuntimeError):    # the client went away (or the reaper hung up)
        pass
    finally:
        if hang_up in session.on_close:
            session.on_close.remove(hang_up)
        if session.parked_at is None:              # parked by the reaper: kept for a reconnect
            await store.close(session, "was closed: its client disconnected")
        try:
            await ws.close()
        except (WebSocketDisconnect, RuntimeError):    # already closed by the client
            pass


def _with_session(result: dict, session) -> str:
    """An observation reply carrying the session's id and token (what a reconnect resumes with)."""
    result = {**result, "observation": {**result["observation"], "session": _session_keys(session)}}
    return to_json({"type": "observation", "data": result})


async def _resume(store: SessionStore, session, data: dict):
    """A reset naming a session: take up that parked session on this socket (reply, session)."""
    try:
        parked = store.get(data.get("session_id"), data.get("session_token"))
    except SessionError as err:
        return _error(f"cannot resume: {err}", "EXECUTION_ERROR"), session
    if parked is session:
        return _error("this socket already serves that session", "EXECUTION_ERROR"), session
    if parked.parked_at is None:
        return _error("cannot resume: the session is still connected on another socket", "EXECUTION_ERROR"), session
    last = parked.value.last
    if last is None:
        return _error("cannot resume: the session had no episode; reset without session_id", "EXECUTION_ERROR"), \
            session
    store.resume(parked.id, parked.token)
    return _with_session(last, parked), parked


async def _answer(store: SessionStore, session, raw: str):
    """One WebSocket message -> (the reply text, the session this socket serves next); the
    reply is None when the client asked to close."""
    try:
        message = parse_json(raw)
    except ValueError as err:
        return _error(f"Invalid JSON: {err}", "INVALID_JSON"), session
    if not isinstance(message, dict):
        return _error("a message is a JSON object with a type", "VALIDATION_ERROR"), session
    kind, data = message.get("type", ""), message.get("data", {})
    game: GameSession = session.value
    try:
        if kind == "reset":
            if not isinstance(data, dict):
                return _error("reset data is an object of reset options", "VALIDATION_ERROR"), session
            if "session_id" in data or "session_token" in data:
                return await _resume(store, session, data)
            try:
                result = await store.run(session, lambda: game.reset(**data))
            finally:
                _reseat(session)
            session.touch()
            return _with_session(result, session), session
        if kind == "step":
            try:
                action = GameAction.model_validate(data)
            except ValidationError as err:
                return _error("Invalid message", "VALIDATION_ERROR", errors=validation_errors(err.errors())), session
            result = await store.run(session, game.step, action.model_dump())
            session.touch(step=True)
            return to_json({"type": "observation", "data": result}), session
        if kind == "state":
            session.touch()
            return to_json({"type": "state", "data": game.state()}), session
        if kind == "close":
            return None, session
        return _error(f"Unknown message type: {kind}", "UNKNOWN_TYPE"), session
    except (BadRequest, SessionError) as err:
        return _error(str(err), "EXECUTION_ERROR"), session
    except Exception as err:                       # a game or policy bug: said, logged, session kept
        logger.exception("session %s: %s failed", session.id[:8], kind)
        return _error(f"internal error: {type(err).__name__}: {err}; reset to start over", "EXECUTION_ERROR"), session
