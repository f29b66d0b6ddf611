"""The browser arena (``socialgym arena``): people play any game in the browser, against each
other and against any policy, and are rated on the leaderboard like any policy.

One page (``socialgym_agents/serve/static/``: plain HTML, CSS and JavaScript, no build step, no CDN)
serves four views, chosen by the URL path:

- ``/`` -- the **lobby**: pick a game, its config and seed, and what plays each seat: a person
  (``human`` with a name), a scripted baseline (``scripted:...``) or one of the model specs the
  operator allowed on the command line (``--models``: the embedded ``smollm2``, ``openai:...``,
  ``hf:...`` adapters). Creating a game answers one secret link per human seat; it lists the
  live games to watch and the finished episodes to replay.
- ``/play/<game>/<seat>#<token>`` -- a **seat**: exactly the env's own observation text for that
  seat (rules, private information, what it has seen), whose turn it is and who is thinking,
  the public transcript as it grows, and the legal actions as controls built from the seat's
  ``action_schema`` (a button per finite choice, number inputs, a text box for talk).
- ``/watch/<game>`` -- a **spectator**: the public transcript, whose turn, who is thinking, the
  result; never a seat's observation or role.
- ``/hotseat/<game>#<token>`` -- every human seat on one screen, handed over between turns
  (the game's own token; :class:`Viewer`).
- ``/replay/<episode_id>`` -- the **replay** of any finished episode in the log folder (arena
  games and any other run's logs put there), step by step and seat by seat: the engine rebuilds
  each step from the seed and the logged actions (:func:`socialgym_env.logs.restore_env`).

Live updates go over one WebSocket per page (``/ws/<game>``): the page says who it is in its
first message (``{"type": "hello", "seat": "player_0", "token": "..."}`` or ``{"type":
"hello", "watch": true}``), then receives the whole view it may see after every change
(``{"type": "view", ...}``) and sends moves (``{"type": "act", "action": "..."}``; the
hot-seat screen also ``{"type": "reveal", "seat": ...}``).

Security model (the tests read every frame a seat's connection gets over whole games):

- A game is a session of the shared :class:`~socialgym_agents.serve.sessions.SessionStore` with one
  secret token per human seat (256 bits) and the session's own token for the hot-seat screen.
  A seat's view and its moves need that seat's token; a link carries its token in the URL
  *fragment*, which browsers never send to a server (so it is in no request line, log or
  Referer). A wrong or missing token gets one error frame and a closed
  socket, and the same answer as an unknown game.
- A seat's frames hold only what the env shows that seat (its observation text, its known role,
  its decision view's legal actions) plus public information; the spectator's frames hold only
  public information. Other seats' roles, secrets and private messages never leave the server
  during the game, nor does who is to move in a hidden-role phase that only some seats play
  (``env.actors_public()``). After the game, its replay (every seat's view) is open to anyone
  who can reach the arena, as logs and ``socialgym replay`` are.
- Model specs come only from the operator (``--models``): a browser cannot make the server load
  weights or call a URL. Names are checked (1-32 characters, no control characters); every
  user string reaches the page only inside JSON and is rendered with ``textContent``; the
  server sends no HTML built from data, and the page's Content-Security-Policy allows only its
  own script file.
- Binds 127.0.0.1 unless ``--host`` and ``--allow-remote`` are both given
  (:func:`socialgym_agents.serve.app.serve`).

Every finished game is appended to ``<log_dir>/arena.jsonl`` by the engine's log writer, in
the same record as every other run, the human seats' policy being ``human:<name>``:
``socialgym leaderboard <log_dir>`` rates them as any other competitor. A game abandoned
before its end (idle timeout, server stop) or whose model seat failed is logged as a failed
record with the reason; the leaderboard skips those. The arena also keeps live openskill
(Plackett–Luce) ratings of everyone who played (``/api/ratings``, :mod:`socialgym_agents.skill`):
the log folder's episodes when it starts, then each game as it is logged.

Model seats act through the policy registry (one shared :class:`~socialgym_agents.jobs.PolicyPool`, so
a model loads once) on the store's worker thread, off the event loop: pages stay live while a
model thinks.
"""
from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional, Sequence

from fastapi import APIRouter, Body, Depends, FastAPI, WebSocket, WebSocketDisconnect
from fastapi.requests import HTTPConnection
from fastapi.responses import FileResponse

import socialgym_env
from socialgym_env.actions import safe_repr
from socialgym_env.logs import iter_log_dir, restore_env
from socialgym_env.record import public_transcript

from ..jobs import PolicyPool
from ..skill import SkillRatings
from ..registry import PolicySpecError, check_spec, policy_kind
from ..specs import AgentSpec
from .app import create_app, json_response, parse_json, to_json
from .arena_game import ArenaError, ArenaGame, Viewer, make_env, parse_config, read_new_game
from .limits import ServerLimits
from .sessions import SessionError, SessionStore

logger = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
LOG_FILE = "arena.jsonl"
# A game whose human seats no page has held for this long is closed and logged as abandoned (a
# creator who gave up; players who all left): time enough to send a link and open it.
ABANDON_AFTER_S = 600.0
# The page may run only its own script and style files: a string that slipped into the DOM
# as markup still could not run.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                                           "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


# ---------------------------------------------------------------------- replay
def find_record(log_dir: Path, episode_id: str) -> dict:
    if log_dir.exists():
        for record in iter_log_dir(log_dir, on_skip=lambda message, why: None):
            if record.get("episode_id") == episode_id and not record.get("failed") and record.get("finished"):
                return record
    raise ArenaError(f"no finished episode {safe_repr(episode_id, 80)} in {log_dir}")


def replay_view(record: dict, step: int, seat: Optional[str]) -> dict:
    """The replay at ``step`` (0: the start; n: after n logged turns): the public transcript
    then, the turn played there, and -- the game being over, nothing is hidden any more --
    the chosen seat's observation as the env showed it then, and every seat's role."""
    turns = record["turns"]
    step = max(0, min(int(step), len(turns)))
    env = restore_env(record["game"], record.get("config"), record["seed"], record["episode_id"],
                      [t["raw"] for t in turns[:step]])
    state = env.state
    roster = record.get("roster", [])
    agents = [s["agent"] for s in roster]
    if seat not in agents:
        seat = None
    names = {s["agent"]: s.get("name") or s["agent"] for s in roster}
    turn = turns[step - 1] if step else None
    return {"type": "replay", "episode_id": record["episode_id"], "game": record["game"], "seed": record["seed"],
            "game_name": env.game_info.name, "step": step, "steps": len(turns), "seat": seat,
            "seats": [{"agent": s["agent"], "name": names[s["agent"]], "player": s.get("policy"),
                       "role": s.get("role"), "team": s.get("team"),
                       "score": (record.get("scores") or {}).get(s["agent"]),
                       "outcome": (record.get("outcomes") or {}).get(s["agent"])} for s in roster],
            "transcript": public_transcript(state),
            "last_turn": None if turn is None else {"name": names.get(turn["agent"], turn["agent"]),
                                                    "phase": turn.get("phase"), "action": turn.get("action"),
                                                    "valid": turn.get("valid", True)},
            "observation": env.observe(seat)["text"] if seat else None,
            "reason": record.get("reason")}


def list_episodes(log_dir: Path, limit: int = 50) -> list[dict]:
    """The newest finished episodes of the log folder (for the lobby's replay list)."""
    if not log_dir.exists():
        return []
    found = [r for r in iter_log_dir(log_dir, on_skip=lambda message, why: None)
             if not r.get("failed") and r.get("finished")]
    return [{"episode_id": r["episode_id"], "game": r["game"], "reason": r.get("reason"),
             "players": [s.get("policy") for s in r.get("roster", [])]} for r in found[-limit:][::-1]]


# ---------------------------------------------------------------------- the app
@dataclass
class Arena:
    """What every handler of one arena shares (``app.state.arena``)."""

    log_dir: Path                    # where arena.jsonl goes and replays are read from
    models: tuple                    # the model AgentSpecs the lobby may seat (checked)
    store: SessionStore
    pool: PolicyPool                 # one pool for every game: a model loads once
    skill: SkillRatings              # live openskill ratings: the log folder's episodes, then each new game
    games: dict = field(default_factory=dict)     # game id -> its session (the store holds the tokens)
    abandon_after_s: Optional[float] = ABANDON_AFTER_S   # a game no page holds a human seat of this long closes


def _arena(connection: HTTPConnection) -> Arena:
    return connection.app.state.arena


ArenaState = Annotated[Arena, Depends(_arena)]
router = APIRouter()


def create_arena_app(log_dir, models: Sequence = (), max_games: int = 64,
                     idle_timeout_s: Optional[float] = 1800.0, policy_seed: int = 0,
                     limits: Optional[ServerLimits] = None,
                     abandon_after_s: Optional[float] = ABANDON_AFTER_S) -> FastAPI:
    """The arena app (see the module docstring). ``models``: the model specs the lobby may
    seat (checked here); ``log_dir``: where ``arena.jsonl`` goes and replays are read from;
    ``limits``: what one connection may send or hold; ``abandon_after_s``: how long a game may
    wait with no page holding any of its human seats (None: until the idle timeout). Specs
    given as strings are parsed here."""
    if abandon_after_s is not None and not abandon_after_s > 0:
        raise ValueError(f"abandon_after_s must be > 0 or None, got {abandon_after_s}")
    models = tuple(AgentSpec.of(spec) for spec in models)
    for spec in models:
        check_spec(spec)
        if not policy_kind(spec).loads_model:
            raise ValueError(f"--models takes model specs (smollm2, hf:..., openai:...); {str(spec)!r} is not one "
                             "(scripted specs are always offered)")
    store = SessionStore(max_sessions=max_games, idle_timeout_s=idle_timeout_s, worker_thread=True)
    app = create_app(store, title="Social Gym arena",
                     description="Play any Social Gym game in the browser against people and policies.",
                     limits=limits)
    log_dir = Path(log_dir)
    skill = SkillRatings()
    if log_dir.exists():                    # what the folder already holds, in log order
        skill.update_all(iter_log_dir(log_dir, on_skip=lambda message, why: None))
    app.state.arena = arena = Arena(log_dir, models, store, PolicyPool(seed=policy_seed), skill,
                                    abandon_after_s=abandon_after_s)
    app.state.reapers.append(lambda: reap_abandoned(arena))
    app.include_router(router)
    return app


async def reap_abandoned(arena: Arena, now: Optional[float] = None) -> int:
    """Close every game no page has held a human seat of for ``arena.abandon_after_s``, logged
    as a failed episode saying so; returns how many. The idle reaper runs it, and so do the
    lobby's requests, so "Live games" never lists one."""
    if arena.abandon_after_s is None:
        return 0
    closed = 0
    for session in list(arena.games.values()):
        game: ArenaGame = session.value
        if session.closed or not game.abandoned(arena.abandon_after_s, now):
            continue
        why = f"abandoned: no one held a human seat for {arena.abandon_after_s:g} s"
        try:
            await arena.store.run(session, game.write_log, why)
        except SessionError:                 # closed meanwhile
            continue
        await arena.store.close(session, why)
        closed += 1
    return closed


def page():
    return FileResponse(STATIC / "arena.html", media_type="text/html", headers=PAGE_HEADERS)


# Every page is the same static file; its script reads the path and fetches the view.
for _path in ("/", "/play/{game_id}/{seat}", "/watch/{game_id}", "/hotseat/{game_id}", "/replay/{episode_id}"):
    router.add_api_route(_path, page, methods=["GET"], include_in_schema=False)


@router.get("/static/{name}", include_in_schema=False)
async def static(name: str):
    kinds = {"arena.js": "text/javascript", "arena.css": "text/css"}
    if name not in kinds:                  # a fixed list: no path ever reaches the disk
        return json_response({"detail": "not found"}, 404)
    return FileResponse(STATIC / name, media_type=kinds[name], headers=PAGE_HEADERS)


@router.get("/api/options")
async def options(arena: ArenaState):
    return {"games": [{"id": g["id"], "name": g["name"], "num_players": g["num_players"]}
                      for g in socialgym_env.list_games()],
            "scripted": ["scripted:heuristic", "scripted:random"], "models": [str(spec) for spec in arena.models]}


@router.get("/api/seats")
async def seats(game: str, config: str = ""):
    try:
        env = make_env(game, parse_config(config))
    except ArenaError as err:
        return json_response({"detail": str(err)}, 400)
    return {"game": game, "seats": list(env.possible_agents)}


@router.post("/api/games")
async def create(arena: ArenaState, body: dict = Body(...)):
    await reap_abandoned(arena)                  # an abandoned game's slot is free again
    try:
        game, config, plans, seed = read_new_game(body, arena.models)
    except ArenaError as err:
        return json_response({"detail": str(err)}, 400)
    loop = asyncio.get_running_loop()
    humans = [p.agent for p in plans if p.human]

    def build():
        # The episode id names the game and seed, plus a random part: two arena games with
        # the same seed are two episodes (the engine's seed alone decides the deal).
        episode_id = f"arena-{game}-{seed}-{random.SystemRandom().getrandbits(32):08x}"
        return ArenaGame(game, config, seed, plans, arena.pool, arena.log_dir / LOG_FILE, episode_id, loop,
                         on_logged=arena.skill.update)

    try:
        session = await arena.store.create(build, seats=humans)
    except (ArenaError, PolicySpecError, ImportError, OSError, ValueError) as err:   # e.g. a model that does not load
        return json_response({"detail": f"could not start the game: {type(err).__name__}: {err}"}, 400)
    arena.games[session.id] = session

    async def forget() -> None:
        arena.games.pop(session.id, None)

    session.on_close.append(forget)
    asyncio.create_task(_advance(arena.store, session))     # model seats that move first start at once
    arena_game: ArenaGame = session.value
    return {"game_id": session.id, "episode_id": arena_game.episode_id, "seed": seed,
            "watch": f"/watch/{session.id}", "hotseat": f"/hotseat/{session.id}#{session.token}",
            "seats": [{"agent": p.agent, "name": arena_game.env.state.name(p.agent), "player": p.label,
                       "link": f"/play/{session.id}/{p.agent}#{session.seat_tokens[p.agent]}" if p.human else None}
                      for p in plans]}


async def _advance(store: SessionStore, session) -> None:
    try:
        await store.run(session, session.value.advance)
        session.touch()
    except SessionError:
        pass
    except Exception:                         # a game bug: logged, the game marked failed
        logger.exception("arena game %s failed", session.id[:8])
        game: ArenaGame = session.value
        game.error = game.error or "internal error (see the server log)"
        game.write_log()
        game.changed()


@router.get("/api/games")
async def live_games(arena: ArenaState):
    await reap_abandoned(arena)
    out = []
    for game_id, session in list(arena.games.items()):
        view = session.value.public_view()
        out.append({"game_id": game_id, "game": view["game"], "game_name": view["game_name"],
                    "players": [s["player"] for s in view["seats"]], "done": view["done"],
                    "watch": f"/watch/{game_id}"})
    return out


@router.get("/api/ratings")
async def ratings(arena: ArenaState):
    """The live openskill (Plackett–Luce) ratings of everyone who finished a game here."""
    return {"model": "openskill Plackett-Luce", "ratings": arena.skill.table()}


@router.get("/api/episodes")
async def episodes(arena: ArenaState):
    return await asyncio.get_running_loop().run_in_executor(None, list_episodes, arena.log_dir)


@router.get("/api/replay/{episode_id}")
async def replay(arena: ArenaState, episode_id: str, step: int = 0, seat: Optional[str] = None):
    def build():
        return replay_view(find_record(arena.log_dir, episode_id), step, seat)
    try:
        return json_response(await asyncio.get_running_loop().run_in_executor(None, build))
    except ArenaError as err:
        return json_response({"detail": str(err)}, 404)


@router.websocket("/ws/{game_id}")
async def websocket(ws: WebSocket, game_id: str, arena: ArenaState):
    await ws.accept()
    hello = await ws.app.state.handshakes.first_message(ws)
    if hello is None:                              # silent too long, evicted or gone
        return
    try:
        session, viewer = _greet(arena, game_id, parse_json(hello))
    except (ArenaError, SessionError, ValueError) as err:
        await _send_error(ws, str(err))
        await ws.close(code=1008)
        return
    except WebSocketDisconnect:
        return
    game: ArenaGame = session.value
    event = game.listen()
    holds = viewer.seat is not None or viewer.hotseat        # a spectator holds no seat
    if holds:
        game.hold()

    async def hang_up():
        event.set()

    session.on_close.append(hang_up)
    sender = asyncio.create_task(_push_views(ws, session, viewer, event))
    try:
        while not session.closed:
            try:
                message = parse_json(await ws.receive_text())
            except ValueError:
                await _send_error(ws, "a message is JSON: {\"type\": \"act\", \"action\": \"...\"}")
                continue
            session.touch()
            if not isinstance(message, dict):
                continue
            try:
                _on_message(arena, session, viewer, event, message)
            except ArenaError as err:
                await _send_error(ws, str(err))
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        sender.cancel()
        game.unlisten(event)
        if holds:
            game.release()
        if hang_up in session.on_close:
            session.on_close.remove(hang_up)


def _greet(arena: Arena, game_id: str, hello) -> tuple:
    """The session and :class:`Viewer` a page's first message asks for: a spectator (any live
    game), the hot-seat screen (the game's own token) or one seat (that seat's token); raises
    ArenaError or SessionError otherwise."""
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        raise ArenaError("the first message is {\"type\": \"hello\", ...}")
    if hello.get("watch"):
        session = arena.games.get(game_id)
        if session is None:
            raise SessionError("unknown game (games close when idle)")
        return session, Viewer(session.value)
    if hello.get("hotseat"):
        session = arena.store.get(game_id, hello.get("token"))
        return session, Viewer(session.value, hotseat=True)
    seat = hello.get("seat")
    session = arena.store.get(game_id, hello.get("token"), seat=seat if isinstance(seat, str) else "")
    return session, Viewer(session.value, seat=seat)


def _on_message(arena: Arena, session, viewer: "Viewer", event, message: dict) -> None:
    """A page's later message: the hot-seat screen's reveal or hide, or a move by the seat the
    viewer may act for (a model seat's answer follows off the event loop); anything else is ignored."""
    kind = message.get("type")
    if kind == "reveal":
        viewer.reveal(message.get("seat"))
        event.set()
    elif kind == "hide":
        viewer.hide()
        event.set()
    elif kind == "act" and viewer.acting_seat() is not None:
        session.value.submit(viewer.acting_seat(), message.get("action"))
        viewer.moved()
        session.touch(step=True)
        asyncio.create_task(_advance(arena.store, session))


async def _push_views(ws: WebSocket, session, viewer: "Viewer", event) -> None:
    sent = None
    try:
        while True:
            await event.wait()
            event.clear()
            key = viewer.key()
            if key != sent:
                sent = key
                await ws.send_text(to_json(viewer.frame()))
            if session.closed:
                await ws.close(code=1001, reason="game closed")
                return
    except (WebSocketDisconnect, RuntimeError):
        pass


async def _send_error(ws: WebSocket, message: str) -> None:
    try:
        await ws.send_text(to_json({"type": "error", "message": message}))
    except (WebSocketDisconnect, RuntimeError):
        pass
