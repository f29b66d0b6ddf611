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
record with the reason; the leaderboard skips those.

Model seats act through the policy registry (one shared :class:`~socialgym_agents.jobs.PolicyPool`, so
a model loads once) on the store's worker thread, off the event loop: pages stay live while a
model thinks.
"""
from __future__ import annotations

import asyncio
import logging
import random
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional, Sequence

from fastapi import APIRouter, Body, Depends, FastAPI, WebSocket, WebSocketDisconnect
from fastapi.requests import HTTPConnection
from fastapi.responses import FileResponse

import socialgym_env
from socialgym_env.actions import ActionError, safe_repr
from socialgym_env.logs import append_episode, iter_log_dir, restore_env
from socialgym_env.record import public_transcript

from ..base import Request, seat_seed
from ..jobs import EpisodeJob, PolicyPool, failed_record
from ..registry import PolicySpecError, check_spec
from .app import create_app, json_response, parse_json, to_json
from .game_session import (MAX_ACTION_CHARS, MAX_CONFIG_CHARS, BadRequest, check_config, check_id,
                           is_model_spec)
from .limits import ServerLimits
from .sessions import SessionError, SessionStore

logger = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
HUMAN = "human"
MAX_NAME_CHARS = 32
LOG_FILE = "arena.jsonl"
# The page may run only its own script and style files: a string that slipped into the DOM
# as markup still could not run.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                                           "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


class ArenaError(ValueError):
    """A lobby request that cannot be served (the message says why and what is valid)."""


def check_name(name) -> str:
    """A person's display name: 1-32 characters, no control characters (anything else, quotes,
    angle brackets and any script included, is kept as typed and shown as text)."""
    if not isinstance(name, str) or not name.strip():
        raise ArenaError("a human seat needs a name (1 to 32 characters)")
    name = " ".join(name.split())
    if len(name) > MAX_NAME_CHARS:
        raise ArenaError(f"a name has at most {MAX_NAME_CHARS} characters (got {len(name)})")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise ArenaError("a name may not hold control or invisible format characters")
    return name


@dataclass(frozen=True)
class SeatPlan:
    """What plays one seat: ``spec`` is a policy spec, or ``human:<name>`` for a person."""

    agent: str
    spec: str

    @property
    def human(self) -> bool:
        return self.spec.startswith(HUMAN + ":")


def plan_seats(seats, agents: Sequence[str], models: Sequence[str]) -> list[SeatPlan]:
    """The lobby's seat list -> one plan per seat, checked (ArenaError says what is wrong).

    Each entry is ``{"kind": "human", "name": ...}`` or ``{"kind": "policy", "spec": ...}``;
    policy specs are ``scripted:...`` or one of the operator's ``models``."""
    if not isinstance(seats, list) or len(seats) != len(agents):
        raise ArenaError(f"give one entry per seat: this game has {len(agents)} seats")
    plans, names = [], set()
    for agent, seat in zip(agents, seats):
        if not isinstance(seat, dict):
            raise ArenaError(f"{agent}: a seat is an object with kind and name or spec")
        if seat.get("kind") == HUMAN:
            name = check_name(seat.get("name"))
            if name.casefold() in names:
                raise ArenaError(f"two human seats are both called {name!r}; give each person their own name")
            names.add(name.casefold())
            plans.append(SeatPlan(agent, f"{HUMAN}:{name}"))
            continue
        spec = seat.get("spec")
        if not isinstance(spec, str) or not spec.strip():
            raise ArenaError(f"{agent}: a policy seat needs a spec")
        try:
            spec = check_id(spec.strip(), "a policy spec")
        except BadRequest as err:
            raise ArenaError(f"{agent}: {err}") from None
        if is_model_spec(spec) and spec not in models:
            raise ArenaError(f"{agent}: model spec {spec!r} is not offered by this arena; offered: "
                             f"{', '.join(models) or 'none (start it with --models)'}")
        if not is_model_spec(spec) and not spec.startswith("scripted:"):
            raise ArenaError(f"{agent}: {spec!r} is neither a scripted spec (scripted:...) nor an offered model")
        try:
            check_spec(spec)
        except PolicySpecError as err:
            raise ArenaError(f"{agent}: {err}") from None
        plans.append(SeatPlan(agent, spec))
    return plans


def parse_config(config) -> dict:
    """The lobby's game config: a JSON object (or its text), at most 2,000 characters."""
    if config in (None, ""):
        return {}
    if isinstance(config, str):
        if len(config) > MAX_CONFIG_CHARS:
            raise ArenaError(f"the config is at most {MAX_CONFIG_CHARS} characters")
        try:
            config = parse_json(config)
        except ValueError as err:
            raise ArenaError(f"the config is a JSON object, e.g. {{\"rounds\": 3}} "
                             f"({type(err).__name__}: {err})") from None
    try:
        return check_config(config)
    except BadRequest as err:
        raise ArenaError(str(err)) from None


def make_env(game: str, config: dict):
    try:
        return socialgym_env.make(check_id(game, "game"), **config)
    except (socialgym_env.SocialGymError, ValueError, TypeError) as err:
        raise ArenaError(str(err)) from None


class ArenaGame:
    """One live game of the arena: the env, what plays each seat, the moves people sent.

    Thread use: moves are played on the store's worker thread (:meth:`advance`) while views are
    read on the event loop; ``self.lock`` guards the env, and is released while a model
    thinks, so every page can still be served then."""

    def __init__(self, game: str, config: dict, seed: int, plans: Sequence[SeatPlan], pool: PolicyPool,
                 log_path: Path, episode_id: str, loop: asyncio.AbstractEventLoop):
        self.env = make_env(game, config)
        self.env.reset(seed=seed, options={"episode_id": episode_id})
        self.game, self.config, self.seed, self.episode_id = game, config, seed, episode_id
        self.plans = {p.agent: p for p in plans}
        self.pool, self.log_path, self.loop = pool, log_path, loop
        self.lock = threading.RLock()
        self.queued: dict[str, str] = {}        # seat -> move a person sent, not yet played
        self.thinking: Optional[str] = None     # the model seat deciding now
        self.error: Optional[str] = None        # why the game stopped early, if it did
        self.logged = False
        self.final_infos: dict = {}
        self.version = 0                        # bumped on every change the pages must show
        self._wakers: set = set()
        for agent, plan in self.plans.items():
            if not plan.human:
                policy = pool.get(plan.spec)
                policy.reset((episode_id, agent), seat_seed(game, seed, agent))
        self.env.skip_dead()

    # ------------------------------------------------------------------ state the pages read
    @property
    def done(self) -> bool:
        return self.error is not None or self.env.state.result is not None

    def pending(self) -> list[str]:
        return [] if self.done else self.env.pending_actors()

    def waiting_humans(self) -> list[str]:
        """Human seats that have a move to make now and have not sent it."""
        with self.lock:
            return [a for a in self.pending() if self.plans[a].human and a not in self.queued]

    def turn_is_public(self) -> bool:
        """Whether who is to move now may be shown (:meth:`SocialGymEnv.actors_public`: not in a
        hidden-role phase only some seats play, where naming them gives their roles away)."""
        return self.done or self.env.actors_public()

    def hotseat_candidates(self) -> list[str]:
        """The seats the hot-seat screen may open now: the humans to move when that is public,
        else every human seat in play (each looks in turn; one with no move just hands over)."""
        with self.lock:
            if self.turn_is_public():
                return self.waiting_humans()
            state = self.env.state
            return [a for a, p in self.plans.items() if p.human and state.seat[a].alive and not self.done]

    def labels(self) -> dict:
        return {agent: plan.spec for agent, plan in self.plans.items()}

    def public_view(self) -> dict:
        """What anyone may see: the board's public lines, the seats (name, who plays them),
        whose turn, who is thinking, the result. Never a role, a secret or a private line."""
        with self.lock:
            state = self.env.state
            public_turn = self.turn_is_public()
            pending = self.pending() if public_turn else []
            seats = [{"agent": a, "name": state.name(a), "player": p.spec, "human": p.human,
                      "alive": state.seat[a].alive, "to_act": a in pending and a not in self.queued}
                     for a, p in self.plans.items()]
            view = {"type": "view", "game": self.game, "game_name": self.env.game_info.name,
                    "episode_id": self.episode_id, "seed": self.seed, "version": self.version, "step": state.step,
                    "seats": seats, "transcript": public_transcript(state),
                    "thinking": state.name(self.thinking) if self.thinking and public_turn else None,
                    "turn_hidden": not public_turn, "done": self.done, "error": self.error, "result": None}
            result = state.result
            if result is not None:
                view["result"] = {"reason": result.reason,
                                  "scores": {state.name(a): s for a, s in result.scores.items()},
                                  "winners": [state.name(a) for a in result.winners]}
            return view

    def seat_view(self, agent: str) -> dict:
        """One seat's page: the public view plus exactly what the env shows this seat."""
        with self.lock:
            view = self.public_view()
            if agent in self.pending():
                info = self.env.decision_view(agent)
            else:
                info = self.final_infos.get(agent) or self.env.infos.get(agent) or self.env.views.basic_info(agent)
            view.update(kind="seat", seat=agent, name=self.env.state.name(agent),
                        player=self.plans[agent].spec, role=info.get("role"),
                        observation=self.env.observe(agent)["text"], submitted=self.queued.get(agent),
                        controls=None)
            if agent in self.pending() and agent not in self.queued:
                view["controls"] = {"phase": info.get("phase"), "instructions": info.get("instructions"),
                                    "action_schema": info.get("action_schema"),
                                    "legal_actions": info.get("legal_actions"),
                                    "legal_action_list": info.get("legal_action_list")}
            if self.done and self.env.state.result is not None:
                view["outcome"] = info.get("outcome")
            return view

    # ------------------------------------------------------------------ moves
    def submit(self, agent: str, action: str) -> None:
        """A person's move for ``agent``, checked against the seat's grammar now: an illegal
        one is refused (ArenaError with the reason) and nothing changes."""
        if not isinstance(action, str) or not action.strip():
            raise ArenaError("send a move: the action text, e.g. defect or {\"action_type\": \"vote\", ...}")
        if len(action) > MAX_ACTION_CHARS:
            raise ArenaError(f"a move is at most {MAX_ACTION_CHARS} characters")
        with self.lock:
            if self.done:
                raise ArenaError("the game is over")
            if agent not in self.pending():
                raise ArenaError("it is not your turn")
            if agent in self.queued:
                raise ArenaError("you have already moved this turn")
            try:
                self.env.grammar(agent).parse(action)
            except ActionError as err:
                raise ArenaError(f"not a legal move now: {err}") from None
            self.queued[agent] = action
            self.changed()

    def advance(self) -> None:
        """Play every move that is due: people's queued moves and model seats' decisions, until
        a person has to move or the game ends (logged before the pages are told). Runs on the
        worker thread."""
        while True:
            with self.lock:
                if self.done:
                    break
                env = self.env
                agent = env.agent_selection
                if agent in self.queued:
                    env.step(self.queued.pop(agent))
                    self._after_step()
                    continue
                plan = self.plans[agent]
                if plan.human:
                    return
                policy = self.pool.get(plan.spec)
                parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
                request = Request((self.episode_id, agent), env.observe(agent), env.infos[agent], parts)
                if not getattr(policy, "instant", False):     # scripted seats answer at once
                    self.thinking = agent
                    self.changed()
            try:                                 # outside the lock: the pages stay live
                decision = policy.act_batch([request])[0]
                failure = decision.error
            except Exception as err:             # a model backend down, a policy bug
                decision, failure = None, err
            with self.lock:
                self.thinking = None
                if failure is not None:
                    self.error = f"{plan.spec} failed: {type(failure).__name__}: {failure}"
                    self.write_log()
                    self.changed()
                    break
                env.step(decision.action)
                if decision.meta:
                    env.annotate_last_turn(agent_meta=decision.meta)
                self._after_step()

    def _after_step(self) -> None:
        if self.env.state.result is not None:
            # The seats' final infos (score, outcome) before the AEC end-of-game steps drop them.
            self.final_infos = {a: dict(self.env.infos[a]) for a in self.plans}
            self.write_log()                # before any page hears the game is over
        else:
            self.env.skip_dead()            # eliminated seats' turns, as agent_iter steps them
        self.changed()

    def write_log(self, reason: Optional[str] = None) -> None:
        """Append the episode to the arena's log once: the record if it ended, else a failed
        record with ``reason`` (or the model error that stopped it)."""
        with self.lock:
            if self.logged:
                return
            self.logged = True
            if self.env.state.result is not None:
                record = self.env.episode_record(policies=self.labels(), extra={"tags": {"arena": True}})
            else:
                job = EpisodeJob(self.game, self.seed, [p.spec for p in self.plans.values()], config=self.config,
                                 episode_id=self.episode_id, tags={"arena": True})
                record = failed_record(job, RuntimeError(self.error or reason or "the game was stopped"))
            append_episode(self.log_path, record)
            for agent, plan in self.plans.items():
                policy = None if plan.human else self.pool.get(plan.spec)
                if hasattr(policy, "release"):
                    policy.release((self.episode_id, agent))

    def close(self) -> None:
        """The session is closing (idle timeout, server stop): log the game if not yet."""
        self.write_log("abandoned: the arena closed the game before its end (idle timeout or server stop)")
        self.changed()

    # ------------------------------------------------------------------ telling the pages
    def changed(self) -> None:
        """Bump the version and wake every connection (from any thread)."""
        self.version += 1
        try:
            self.loop.call_soon_threadsafe(self._wake)
        except RuntimeError:                     # the loop is closed (server stopped)
            pass

    def _wake(self) -> None:
        for event in list(self._wakers):
            event.set()

    def listen(self) -> asyncio.Event:
        event = asyncio.Event()
        event.set()                              # the first view goes out at once
        self._wakers.add(event)
        return event

    def unlisten(self, event: asyncio.Event) -> None:
        self._wakers.discard(event)


class Viewer:
    """What one connection may see and do: a seat (its view, its moves), a spectator (public
    view only) or the hot-seat screen (the game's own token: between turns a "pass the screen
    to ..." frame with public information only; a seat is shown only after its player asks
    with ``{"type": "reveal", "seat": ...}``, and hidden again once it has moved or on
    ``{"type": "hide"}``)."""

    def __init__(self, game: ArenaGame, seat: Optional[str] = None, hotseat: bool = False):
        self.game, self.seat, self.hotseat = game, seat, hotseat
        self.revealed: Optional[str] = None

    def acting_seat(self) -> Optional[str]:
        return self.revealed if self.hotseat else self.seat

    def reveal(self, seat) -> None:
        if not self.hotseat:
            raise ArenaError("only the hot-seat screen reveals seats")
        if seat not in self.game.hotseat_candidates():
            raise ArenaError("that seat has no move to make now")
        self.revealed = seat

    def hide(self) -> None:
        self.revealed = None

    def moved(self) -> None:
        if self.hotseat:                         # hand the screen over at once
            self.revealed = None

    def key(self) -> tuple:
        return self.game.version, self.revealed

    def frame(self) -> dict:
        if self.seat is not None:
            return self.game.seat_view(self.seat)
        if self.revealed is not None:
            return dict(self.game.seat_view(self.revealed), hotseat=True)
        view = self.game.public_view()
        if self.hotseat:
            view.update(kind="hotseat", next=[{"agent": a, "name": self.game.env.state.name(a),
                                               "player": self.game.plans[a].spec}
                                              for a in self.game.hotseat_candidates()])
        else:
            view["kind"] = "spectator"
        return view


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
    models: tuple                    # the model specs the lobby may seat (checked)
    store: SessionStore
    pool: PolicyPool                 # one pool for every game: a model loads once
    games: dict = field(default_factory=dict)     # game id -> its session (the store holds the tokens)


def _arena(connection: HTTPConnection) -> Arena:
    return connection.app.state.arena


ArenaState = Annotated[Arena, Depends(_arena)]
router = APIRouter()


def create_arena_app(log_dir, models: Sequence[str] = (), max_games: int = 64,
                     idle_timeout_s: Optional[float] = 1800.0, policy_seed: int = 0,
                     limits: Optional[ServerLimits] = None) -> FastAPI:
    """The arena app (see the module docstring). ``models``: the model specs the lobby may
    seat (checked here); ``log_dir``: where ``arena.jsonl`` goes and replays are read from;
    ``limits``: what one connection may send or hold."""
    models = tuple(models)
    for spec in models:
        check_spec(spec)
        if not is_model_spec(spec):
            raise ValueError(f"--models takes model specs (smollm2, hf:..., openai:...); {spec!r} is not one "
                             "(scripted specs are always offered)")
    store = SessionStore(max_sessions=max_games, idle_timeout_s=idle_timeout_s, worker_thread=True)
    app = create_app(store, title="Social Gym arena",
                     description="Play any Social Gym game in the browser against people and policies.",
                     limits=limits)
    app.state.arena = Arena(Path(log_dir), models, store, PolicyPool(seed=policy_seed))
    app.include_router(router)
    return app


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
            "scripted": ["scripted:heuristic", "scripted:random"], "models": list(arena.models)}


@router.get("/api/seats")
async def seats(game: str, config: str = ""):
    try:
        env = make_env(game, parse_config(config))
    except ArenaError as err:
        return json_response({"detail": str(err)}, 400)
    return {"game": game, "seats": list(env.possible_agents)}


def read_new_game(body: dict, models: Sequence[str]) -> tuple:
    """A lobby's new-game request checked: (game, config, seat plans, seed); ArenaError says
    what is wrong. An empty seed is drawn at random."""
    game = body.get("game")
    if not isinstance(game, str):
        raise ArenaError("name a game (see /api/options)")
    config = parse_config(body.get("config"))
    plans = plan_seats(body.get("seats"), make_env(game, config).possible_agents, models)
    seed = body.get("seed")
    if seed in (None, ""):
        seed = random.SystemRandom().randrange(2**31)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ArenaError("the seed is a whole number >= 0 (or empty for a random one)")
    return game, config, plans, seed


@router.post("/api/games")
async def create(arena: ArenaState, body: dict = Body(...)):
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
        return ArenaGame(game, config, seed, plans, arena.pool, arena.log_dir / LOG_FILE, episode_id, loop)

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
            "seats": [{"agent": p.agent, "name": arena_game.env.state.name(p.agent), "player": p.spec,
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
    out = []
    for game_id, session in list(arena.games.items()):
        view = session.value.public_view()
        out.append({"game_id": game_id, "game": view["game"], "game_name": view["game_name"],
                    "players": [s["player"] for s in view["seats"]], "done": view["done"],
                    "watch": f"/watch/{game_id}"})
    return out


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
