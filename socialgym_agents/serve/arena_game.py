"""The arena's games (:mod:`socialgym_agents.serve.arena` serves them): a lobby's request read into
seat plans, one live game (:class:`ArenaGame`: the env, what plays each seat, the moves people
sent) and what one connection may see of it (:class:`Viewer`). The security model is the
arena's (its module docstring); this module keeps it: a seat's view holds only what the env
shows that seat, the public view only public information."""
from __future__ import annotations

import asyncio
import random
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import socialgym_env
from socialgym_env.actions import ActionError
from socialgym_env.logs import append_episode
from socialgym_env.record import public_transcript

from ..base import Request, seat_seed
from ..jobs import EpisodeJob, PolicyPool, failed_record
from ..registry import PolicySpecError, check_spec, policy_kind
from ..specs import AgentSpec
from .app import parse_json
from .game_session import MAX_ACTION_CHARS, MAX_CONFIG_CHARS, BadRequest, check_config, check_id

HUMAN = "human"
MAX_NAME_CHARS = 32


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
    """What plays one seat: a policy's spec, or ``human:<name>`` for a person."""

    agent: str
    spec: AgentSpec

    @property
    def human(self) -> bool:
        return policy_kind(self.spec).interactive

    @property
    def label(self) -> str:
        """What the pages and the log call the seat's player (the spec's canonical string)."""
        return str(self.spec)


def plan_seats(seats, agents: Sequence[str], models: Sequence[AgentSpec]) -> list[SeatPlan]:
    """The lobby's seat list -> one plan per seat, checked (ArenaError says what is wrong).

    Each entry is ``{"kind": "human", "name": ...}`` or ``{"kind": "policy", "spec": ...}``;
    policy specs are of a scripted kind or one of the operator's ``models``."""
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
            plans.append(SeatPlan(agent, AgentSpec(HUMAN, name)))
        else:
            plans.append(SeatPlan(agent, _policy_seat(agent, seat.get("spec"), models)))
    return plans


def _policy_seat(agent: str, text, models: Sequence[AgentSpec]) -> AgentSpec:
    """A policy seat's spec: a scripted kind, or a model the operator offers."""
    if not isinstance(text, str) or not text.strip():
        raise ArenaError(f"{agent}: a policy seat needs a spec")
    try:
        spec = AgentSpec.parse(check_id(text.strip(), "a policy spec"))
        kind = policy_kind(spec)
    except (BadRequest, PolicySpecError) as err:
        raise ArenaError(f"{agent}: {err}") from None
    if kind.loads_model and spec not in models:
        raise ArenaError(f"{agent}: model spec {str(spec)!r} is not offered by this arena; offered: "
                         f"{', '.join(map(str, models)) or 'none (start it with --models)'}")
    if not kind.loads_model and not kind.scripted:
        raise ArenaError(f"{agent}: {str(spec)!r} is neither a scripted spec (scripted:...) nor an offered model")
    try:
        check_spec(spec)
    except PolicySpecError as err:
        raise ArenaError(f"{agent}: {err}") from None
    return spec


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
                 log_path: Path, episode_id: str, loop: asyncio.AbstractEventLoop,
                 on_logged: Optional[Callable[[dict], None]] = None):
        self.env = make_env(game, config)
        self.on_logged = on_logged              # told each record once it is in the log (live ratings)
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
        # Who holds a human seat: the open seat and hot-seat pages (spectators hold none), and
        # since when none has (monotonic; from creation: the creator has not opened a link yet).
        self.holders = 0
        self.unheld_since: Optional[float] = time.monotonic()
        for agent, plan in self.plans.items():
            if not plan.human:
                policy = pool.get(plan.spec)
                policy.reset((episode_id, agent), seat_seed(game, seed, agent))
        self.env.skip_dead()

    # ------------------------------------------------------------------ who holds the human seats
    def hold(self) -> None:
        """A seat or hot-seat page connected (on the event loop)."""
        self.holders += 1
        self.unheld_since = None

    def release(self) -> None:
        """A seat or hot-seat page went away (on the event loop)."""
        self.holders -= 1
        if self.holders == 0:
            self.unheld_since = time.monotonic()

    def abandoned(self, after_s: float, now: Optional[float] = None) -> bool:
        """Whether the game waits on people no page has held for more than ``after_s`` seconds:
        unfinished, with a human seat, and no seat or hot-seat page open that long (a creator who
        closed the lobby without opening a link, players who all left)."""
        now = time.monotonic() if now is None else now
        return (not self.done and any(plan.human for plan in self.plans.values())
                and self.unheld_since is not None and now - self.unheld_since > after_s)

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
        return {agent: plan.label for agent, plan in self.plans.items()}

    def public_view(self) -> dict:
        """What anyone may see: the board's public lines, the seats (name, who plays them),
        whose turn, who is thinking, the result. Never a role, a secret or a private line."""
        with self.lock:
            state = self.env.state
            public_turn = self.turn_is_public()
            pending = self.pending() if public_turn else []
            seats = [{"agent": a, "name": state.name(a), "player": p.label, "human": p.human,
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
                        player=self.plans[agent].label, role=info.get("role"),
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
                job = EpisodeJob(self.game, self.seed, [p.label for p in self.plans.values()], config=self.config,
                                 episode_id=self.episode_id, tags={"arena": True})
                record = failed_record(job, RuntimeError(self.error or reason or "the game was stopped"))
            append_episode(self.log_path, record)
            if self.on_logged is not None:
                self.on_logged(record)
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
                                               "player": self.game.plans[a].label}
                                              for a in self.game.hotseat_candidates()])
        else:
            view["kind"] = "spectator"
        return view


def read_new_game(body: dict, models: Sequence[AgentSpec]) -> tuple:
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
