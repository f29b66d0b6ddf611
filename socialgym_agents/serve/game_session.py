"""One network session's game: one seat of any game, the other seats played by policies.

Protocol-neutral (the OpenEnv routes in :mod:`socialgym_agents.serve.openenv_app` turn it into messages;
a verifiers or browser front end can drive it the same way). A thin layer over
:class:`socialgym_agents.single_agent.SingleAgentEnv`, which owns seating, opponents and rewards.

Reset options (all optional; the server's defaults otherwise):

| key         | meaning                                                                       |
|-------------|-------------------------------------------------------------------------------|
| ``seed``    | episode seed (int >= 0); same seed and options -> same episode, byte for byte |
|             | (omitted: a random seed, reported back in the observation)                    |
| ``game``    | game id (``socialgym list``)                                                  |
| ``seat``    | seat id (``player_1``), seat index, or role (``werewolf``)                    |
| ``seats``   | instead of ``seat``: a list of seat ids or indices this one session plays     |
|             | (self-play); each observation is then the view of the seat to act now         |
| ``opponents``| one policy spec for every other seat, or a list (one per other seat);        |
|             | from a client only scripted specs (see below)                                 |
| ``config``  | game config keys (``{"rounds": 3}``)                                          |

Opponent specs of a kind that loads a model or opens a connection (``smollm2``, ``hf:``,
``openai:``, any kind registered with ``loads_model=True``: :func:`socialgym_agents.registry.policy_kind`)
and people (``human``) are accepted only from the operator (``--opponents`` on the command line), never from a client: a
client must not make the server load weights or call an arbitrary URL.

The observation holds the seat's own view only: its prompt text and its decision info as the
game computes it for that seat. The episode record (every seat's roles and private messages)
and the env's ``true_role`` (which a seat may not know, e.g. Undercover's undercover) are never
sent.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Optional, Union

import socialgym_env
from socialgym_env.actions import safe_repr
from socialgym_env.env import MAX_SEED

from ..jobs import PolicyPool
from ..registry import PolicySpecError, check_spec, policy_kind
from ..specs import AgentSpec, parse_specs
from ..single_agent import SingleAgentEnv

MAX_ACTION_CHARS = 4000          # the text action space's own bound
# Checked at the server's edge, before the engine sees them: the engine's own lookups (a game id
# close to a known one, a spec's parts) cost time in the text's length, and a server must answer
# a 300 kB id in milliseconds. Real ids, seats, specs and configs are far shorter.
MAX_ID_CHARS = 128               # a game id, seat, role, policy spec or episode id
MAX_CONFIG_CHARS = 2000          # a game config, as JSON
MAX_OPPONENT_SPECS = 64
MAX_OPPONENTS_CHARS = MAX_OPPONENT_SPECS * (MAX_ID_CHARS + 1)     # a comma-separated list of them
HIDDEN_INFO_KEYS = ("record", "true_role")
RESET_KEYS = ("seed", "episode_id", "game", "seat", "seats", "opponents", "config")


def _played_seats(game: str, seats: list, all_seats: list) -> list:
    """The seat ids ``seats`` (ids or indices) name, distinct; ValueError otherwise."""
    played = []
    for seat in seats:
        if isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < len(all_seats):
            seat = all_seats[seat]
        if seat not in all_seats or seat in played:
            raise ValueError(f"seats must be distinct seat ids or indices of {game} ({', '.join(all_seats)}), "
                             f"got {safe_repr(seat, 40)}")
        played.append(seat)
    return played


class SeatsEnv(SingleAgentEnv):
    """Several seats of one game played by one session, the other seats by policies. The seat
    to act now is ``learner`` (set whenever the play reaches one of ``seats``), so every
    observation and decision view is that seat's own; at the end ``rewards_by_seat`` holds
    each played seat's rule-decided reward."""

    def __init__(self, game: str, seats: list, opponents, pool: Optional[PolicyPool] = None,
                 policy_seed: int = 0, **config):
        all_seats = list(socialgym_env.make(game, **config).possible_agents)
        played = _played_seats(game, seats, all_seats)
        others = [a for a in all_seats if a not in played]
        specs = [AgentSpec.of(opponents)] if isinstance(opponents, str) else [AgentSpec.of(s) for s in opponents]
        if len(specs) == 1:
            specs = specs * len(others)
        if len(specs) != len(others):
            raise ValueError(f"{game} with seats {', '.join(played)} has {len(others)} other seat(s): give one "
                             f"opponent spec for each, or one for all (got {len(specs)})")
        by_seat = dict(zip(others, specs))
        # The base env wants a spec for every seat but its first learner: the other played seats
        # get one that is never asked to move (the base's own default).
        filler = specs[0] if specs else AgentSpec("scripted", "random")
        super().__init__(game, played[0], [by_seat.get(a, filler) for a in all_seats if a != played[0]],
                         pool=pool, policy_seed=policy_seed, **config)
        self.seats = played
        self._others = by_seat

    def _deal(self, seed: int) -> None:
        super()._deal(seed)
        self.seat_spec = {**{seat: "learner" for seat in self.seats}, **self._others}

    def _release(self) -> None:
        for agent, spec in self.seat_spec.items():
            if spec != "learner" and hasattr(self.pool.get(spec), "release"):
                self.pool.get(spec).release((self.episode_id, agent))

    def pending_request(self):
        env = self.game
        env.skip_dead()
        if env.agents and self.record is None and env.agent_selection in self.seats:
            self.learner = env.agent_selection             # the played seat to act now
            return None
        return super().pending_request()

    def _info(self) -> dict:
        info = super()._info()
        if self.record is not None:
            info["rewards_by_seat"] = {seat: self.record["rewards"][seat] for seat in self.seats}
        return info


class BadRequest(ValueError):
    """A client request that cannot be served (the message says why and what is valid)."""


def check_id(value, what: str) -> str:
    """``value`` if it is a string of 1 to :data:`MAX_ID_CHARS` characters, else BadRequest
    (naming ``what``, echoing at most a short repr)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_CHARS:
        raise BadRequest(f"{what} must be a string of 1 to {MAX_ID_CHARS} characters, got "
                         f"{safe_repr(value, 60)}")
    return value


def check_config(config) -> dict:
    """``config`` if it is an object whose JSON is at most :data:`MAX_CONFIG_CHARS` characters."""
    if not isinstance(config, dict):
        raise BadRequest('a config is an object of game config keys, e.g. {"rounds": 3}')
    if len(json.dumps(config, default=str)) > MAX_CONFIG_CHARS:
        raise BadRequest(f"a config is at most {MAX_CONFIG_CHARS} characters of JSON")
    return config


@dataclass
class GameDefaults:
    """The server's defaults for every new session (the ``serve-env`` options)."""

    game: str = "prisoners_dilemma"
    seat: Union[str, int] = 0
    opponents: tuple = (AgentSpec("scripted", "heuristic"),)     # AgentSpecs (strings are parsed here)
    config: dict = field(default_factory=dict)
    policy_seed: int = 0

    def __post_init__(self):
        self.opponents = tuple(AgentSpec.of(spec) for spec in self.opponents)


@dataclass(frozen=True)
class EnvChoice:
    """What a reset asks to play, checked: the game, one seat (or several), the opponents, the config."""

    game: str
    seat: Union[str, int]
    seats: Optional[tuple]
    opponents: tuple
    config: dict

    @property
    def key(self) -> tuple:
        """Equal for two resets that can share one env."""
        return (self.game, self.seat if self.seats is None else self.seats, self.opponents,
                tuple(sorted((k, repr(v)) for k, v in self.config.items())))


def read_reset(options: dict, defaults: GameDefaults) -> EnvChoice:
    """A reset's options (the server's ``defaults`` for those left out), each checked: BadRequest
    says which is wrong and what is valid."""
    seats = read_seats(options)
    opponents = options.get("opponents")
    return EnvChoice(game=check_id(options.get("game") or defaults.game, "game"),
                     seat=read_seat(options.get("seat", defaults.seat)), seats=seats,
                     opponents=defaults.opponents if opponents is None else client_opponents(opponents),
                     config=check_config(options.get("config") or defaults.config))


def read_seat(seat) -> Union[str, int]:
    """A seat id, a seat index or a role."""
    if isinstance(seat, bool) or not isinstance(seat, (str, int)):
        raise BadRequest(f"seat must be a seat id, a seat index or a role, got {safe_repr(seat, 60)}")
    return check_id(seat, "seat") if isinstance(seat, str) else seat


def read_seats(options: dict) -> Optional[tuple]:
    """The ``seats`` a session plays itself (None: one ``seat``)."""
    seats = options.get("seats")
    if seats is None:
        return None
    if "seat" in options:
        raise BadRequest("give seat (one) or seats (several), not both")
    if not isinstance(seats, list) or not 0 < len(seats) <= MAX_OPPONENT_SPECS:
        raise BadRequest(f"seats is a list of 1 to {MAX_OPPONENT_SPECS} seat ids or indices")
    for one in seats:
        if isinstance(one, str):
            check_id(one, "a seat")
        elif isinstance(one, bool) or not isinstance(one, int):
            raise BadRequest(f"seats holds seat ids or indices, got {safe_repr(one, 60)}")
    return tuple(seats)


def client_opponents(given) -> tuple:
    """A client's ``opponents`` (one spec, several comma-separated, or a list of specs) as
    AgentSpecs, each of a scripted kind (:attr:`PolicyKind.scripted <socialgym_agents.registry.PolicyKind>`)
    and checked: a kind that loads a model or opens a connection is the operator's choice only."""
    too_many = BadRequest(f"opponents must be a policy spec or a list of at most {MAX_OPPONENT_SPECS} specs")
    try:
        if isinstance(given, str) and len(given) <= MAX_OPPONENTS_CHARS:
            specs = parse_specs(given)
        elif isinstance(given, list) and len(given) <= MAX_OPPONENT_SPECS:
            specs = [AgentSpec.parse(check_id(text, "an opponent spec")) for text in given]
        else:
            raise too_many
    except PolicySpecError as err:
        raise BadRequest(str(err)) from None
    if len(specs) > MAX_OPPONENT_SPECS:
        raise too_many
    for spec in specs:
        _check_client_spec(spec)
    return tuple(specs)


def _check_client_spec(spec: AgentSpec) -> None:
    check_id(str(spec), "an opponent spec")
    try:
        if not policy_kind(spec).scripted:
            raise BadRequest(f"opponent {str(spec)!r} refused: a client may choose scripted opponents only "
                             "(models and people are the operator's choice, serve-env --opponents)")
        check_spec(spec)
    except PolicySpecError as err:
        raise BadRequest(str(err)) from None


class GameSession:
    """A game seat for one client (see the module docstring). Not thread-safe: the session
    store runs one call at a time per session."""

    def __init__(self, defaults: GameDefaults, shared_pool: Optional[PolicyPool] = None):
        self.defaults = defaults
        # Model-backed operator opponents load once for the whole server (one loaded model).
        self.shared_pool = shared_pool or PolicyPool(seed=defaults.policy_seed)
        self.env: Optional[SingleAgentEnv] = None
        self._env_key: Optional[tuple] = None
        self.seed: Optional[int] = None
        self.client_episode_id: Optional[str] = None
        self.step_count = 0
        self.last: Optional[dict] = None

    # ------------------------------------------------------------------ requests
    def reset(self, **options) -> dict:
        unknown = sorted(set(options) - set(RESET_KEYS))
        if unknown:
            raise BadRequest(f"unknown reset option(s) {', '.join(safe_repr(k, 40) for k in unknown[:5])}"
                             f"{' ...' if len(unknown) > 5 else ''}; valid: {', '.join(RESET_KEYS)}")
        if options.get("episode_id") is not None:
            check_id(options["episode_id"], "episode_id")
        seed = options.get("seed")
        if seed is None:
            seed = secrets.randbelow(2**31)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
            raise BadRequest(f"seed must be an integer from 0 to 2**64 - 1, got {safe_repr(seed, 60)}")
        env = self._env_for(options)
        obs, info = env.reset(seed=seed)
        self.seed, self.step_count = seed, 0
        self.client_episode_id = options.get("episode_id")
        self.last = self._result(obs["text"], info, env.final_reward() if env.done else None)
        return self.last

    def step(self, action: dict) -> dict:
        if self.env is None or self.last is None:
            raise BadRequest("no episode: send reset first")
        if self.last["done"]:
            raise BadRequest("the episode is over: send reset to start another")
        message = action.get("message") if isinstance(action, dict) else None
        if not isinstance(message, str):
            raise BadRequest('an action is {"message": "<your move as text or JSON>"}')
        if len(message) > MAX_ACTION_CHARS:
            raise BadRequest(f"action message is {len(message)} characters; at most {MAX_ACTION_CHARS}")
        obs, reward, terminated, truncated, info = self.env.step(message)
        self.step_count += 1
        self.last = self._result(obs["text"], info, float(reward) if (terminated or truncated) else 0.0)
        return self.last

    def state(self) -> dict:
        env = self.env
        return {"episode_id": env.episode_id if env else None, "step_count": self.step_count,
                "client_episode_id": self.client_episode_id, "game": env.game_id if env else None,
                "seat": env.learner if env else None, "seats": list(getattr(env, "seats", [])) or None,
                "seed": self.seed,
                "opponents": list(env.opponent_specs) if env else None,
                "done": bool(self.last and self.last["done"])}

    def seat_view(self, seat: str) -> dict:
        """``seat``'s own current view (a caller holding only that seat's token): its observation
        text and decision info, ``your_turn``, and at the end its reward."""
        env = self.env
        if env is None or self.last is None:
            raise BadRequest("no episode: send reset first")
        game = env.game
        your_turn = not env.done and env.learner == seat
        info = {k: v for k, v in (game.infos.get(seat) or {}).items() if k not in HIDDEN_INFO_KEYS} \
            if game.infos else {}
        reward = env.record["rewards"][seat] if env.done else None
        observation = {"text": game.observation_text(seat), "game": env.game_id, "seat": seat, "seed": self.seed,
                       "episode_id": env.episode_id, "your_turn": your_turn,
                       "legal_actions": info.get("legal_action_list") if your_turn else None, "info": info}
        return {"observation": observation, "reward": reward, "done": env.done}

    def step_as(self, seat: str, action: dict) -> dict:
        """A move of ``seat`` only (its token's caller): refused when another seat is to act;
        the answer is ``seat``'s own view after it, never the next seat's."""
        if self.env is not None and not self.env.done and self.env.learner != seat:
            raise BadRequest(f"not {seat}'s turn: {self.env.learner} is to act")
        self.step(action)
        return self.seat_view(seat)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()

    def check_defaults(self) -> None:
        """Build the default seat's env once (BadRequest if the defaults cannot be played)."""
        self._env_for({})
        self.close()

    # ------------------------------------------------------------------ helpers
    def _env_for(self, options: dict) -> SingleAgentEnv:
        """The env a reset with ``options`` plays: the current one when nothing changed."""
        choice = read_reset(options, self.defaults)
        if choice.key != self._env_key:
            self._rebuild(choice)
        return self.env

    def _rebuild(self, choice: "EnvChoice") -> None:
        """A fresh env for ``choice``; its model opponents come from the shared pool (loaded once)."""
        if self.env is not None:
            self.env.close()
            self.env = None
        self._env_key = None
        prebuilt = {spec: self.shared_pool.get(spec) for spec in set(choice.opponents) if policy_kind(spec).loads_model}
        pool = PolicyPool(self.defaults.policy_seed, prebuilt)
        try:
            if choice.seats is None:
                self.env = SingleAgentEnv(choice.game, choice.seat, choice.opponents, pool=pool, **choice.config)
            else:
                self.env = SeatsEnv(choice.game, choice.seats, choice.opponents, pool=pool, **choice.config)
        except (socialgym_env.SocialGymError, ValueError, TypeError) as err:
            raise BadRequest(str(err)) from None
        self._env_key = choice.key

    def _result(self, text: str, info: dict, reward: Optional[float]) -> dict:
        env = self.env
        view = {k: v for k, v in info.items() if k not in HIDDEN_INFO_KEYS}
        observation = {"text": text, "game": env.game_id, "seat": env.learner, "seed": self.seed,
                       "episode_id": env.episode_id, "legal_actions": view.get("legal_action_list"),
                       "truncated": env.truncated, "info": view}
        return {"observation": observation, "reward": reward, "done": env.done}
