"""The engine's face: one PettingZoo AEC env class that runs any :class:`~socialgym_env.game.Game`.

It is glue over four parts, each in its own module, imported one way::

    env.py (AEC protocol, SocialGymEnv) -> record.py -> views.py -> machine.py -> game.py, state.py, actions/
               aec.py (the AEC bookkeeping any AEC env shares)

``machine.py`` runs the phases (who acts, what an action does, the turn cap, the result),
``views.py`` renders what a seat sees on demand, ``record.py`` builds the episode record, and
this class speaks PettingZoo: agent selection, rewards, terminations, infos. It contains no
game-specific code.
"""
from __future__ import annotations

import copy
import operator
import random
import warnings
from typing import Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from .actions import MAX_ACTION_CHARS, ActionError, Grammar, clip, encodable, encodable_data, safe_repr
from .aec import begin_aec_step, start_aec_episode
from .errors import EngineError, GameOverError, InvalidActionError, NotYourTurnError, UnknownAgentError
from .game import Game, outcome_label
from .machine import INVALID_MODES, TurnMachine
from .record import LOG_SCHEMA, episode_record, public_transcript
from .state import State
from .views import CHARSET, MAX_OBSERVATION_CHARS, Views, render_message

__all__ = ["CHARSET", "ENGINE_CONFIG", "INVALID_MODES", "LOG_SCHEMA", "MAX_OBSERVATION_CHARS", "SocialGymEnv",
           "begin_aec_step", "render_message", "start_aec_episode"]

# log_observations: keep each turn's whole observation text in the episode record. Off by default:
# it repeats the history every turn (100 scripted Triadic Werewolf episodes wrote 528 MB);
# logs.replay_observations rebuilds it from the seed and the actions.
ENGINE_CONFIG = {"invalid_action": "fallback", "max_steps": None, "log_observations": False}



def as_index(value, what: str) -> int:
    """``value`` as an int: an int, a numpy integer or a 0-d integer array (what
    Stable-Baselines3's ``predict`` returns). A bool (``True`` would be 1), a float, a string or
    anything else is a ValueError naming ``what``."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ValueError(f"{what} must be an integer, got {safe_repr(value, 80)}")

RESET_OPTIONS = ("episode_id", "names")


def check_reset_options(options) -> dict:
    """``reset``'s options as a dict: None is none; a non-dict or a non-string ``episode_id`` is
    a TypeError. An unknown key is ignored with a warning, not silently (PettingZoo's own
    ``seed_test`` passes ``{"options": 1}``, so refusing it would fail the standard API test)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"reset options are a dict such as {{'episode_id': 'ep-1'}}, got "
                        f"{type(options).__name__} {safe_repr(options, 60)}")
    unknown = [key for key in options if key not in RESET_OPTIONS]
    if unknown:
        warnings.warn(f"reset ignores the unknown option(s) {safe_repr(unknown, 80)}; it takes: "
                      f"{', '.join(RESET_OPTIONS)}", UserWarning, stacklevel=3)
    if "episode_id" in options and not isinstance(options["episode_id"], str):
        raise TypeError(f"episode_id is a string, got {type(options['episode_id']).__name__} "
                        f"{safe_repr(options['episode_id'], 60)}")
    return options


def check_seat_texts(given, name: str) -> None:
    """``given`` is None or a dict of seat -> string (or None), else TypeError naming ``name``."""
    if given is None:
        return
    if not isinstance(given, dict):
        raise TypeError(f"{name} is a dict of seat -> string, got {type(given).__name__} {safe_repr(given, 60)}")
    for seat, value in given.items():
        if not isinstance(seat, str) or not (value is None or isinstance(value, str)):
            raise TypeError(f"{name} is a dict of seat -> string, got {safe_repr(seat, 40)}: {safe_repr(value, 40)}")


class TextSpace(spaces.Text):
    """gymnasium's Text space with a short ``repr``: the wide charset (CHARSET, 12,257
    characters) is counted instead of listed, so ``print(env.observation_space(agent))`` stays one line."""

    def __repr__(self) -> str:
        return f"Text({self.min_length}, {self.max_length}, charset=<{len(self.character_set)} characters>)"

    def sample(self, mask=None, probability=None) -> str:
        """A random string as gymnasium's Text samples it (a uniform length from min to max, each
        character uniform over the charset), drawn as one array of code points: gymnasium picks
        and joins one character at a time, 2-3 ms per 4,000-character action, which was most of
        the time of PettingZoo's performance_benchmark (random actions are junk, so this is the
        invalid-action path). A mask or probability goes to gymnasium's own sampler."""
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        codes = getattr(self, "_codes", None)
        if codes is None:
            codes = self._codes = np.fromiter(map(ord, self.character_list), dtype=np.uint32)
        length = int(self.np_random.integers(self.min_length, self.max_length + 1))
        return codes[self.np_random.integers(0, len(codes), size=length)].tobytes().decode("utf-32-le")


# A wide-charset Text space costs ~20 ms and ~2 MiB to build (its character tables), and every
# env has two per seat. One of each kind is built per process; each env's spaces are shallow
# copies of it: the tables are read-only and shared, the RNG (made at the first seed or
# sample) is each copy's own, so seeding one env's space never moves another's.
_TEXT_SPACES: dict = {}


def _text_space(max_length: int, min_length: int) -> "TextSpace":
    template = _TEXT_SPACES.get((max_length, min_length))
    if template is None:
        template = _TEXT_SPACES[max_length, min_length] = TextSpace(
            max_length=max_length, min_length=min_length, charset=CHARSET)
    return copy.copy(template)


# Seeds are logged and put in episode ids: an integer of at most 64 bits (a numpy integer too).
MAX_SEED = 2**64


def check_seed(seed) -> int:
    """``seed`` as an int, or TypeError (a float, a bool, a string: never silently truncated)
    or ValueError (beyond +-2**64)."""
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__} {safe_repr(seed, 60)}")
    seed = operator.index(seed)
    if not -MAX_SEED < seed < MAX_SEED:
        raise ValueError(f"seed must be an integer of at most 64 bits, got {safe_repr(seed, 60)}")
    return seed


class SocialGymEnv(AECEnv):
    """A Social Gym game as a PettingZoo AEC env with text observations.

    Observation: ``{"text": str}``, the prompt-ready view of the seat. ``infos[agent]`` holds
    the structured view (role, team, phase, legal actions, new messages, invalid-action
    records; at the end score and outcome). Action: a string, JSON or plain form; or, with
    :meth:`step_index`, the position of an action in ``infos[agent]["legal_action_list"]``.
    """

    metadata = {"render_modes": ["human", "ansi"], "name": "socialgym", "is_parallelizable": False}

    def __init__(self, game_cls: type[Game], config: dict, render_mode: Optional[str] = None):
        super().__init__()
        self.game_cls = game_cls
        config = encodable_data(config)      # its strings reach messages and the record
        self.game: Game = game_cls(config)
        # the game object's info: a configuration may refine its class's (Colonel Blotto with
        # talk is no longer a simultaneous-move game)
        self.game_info = self.game.info
        self.config = config
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, name=f"socialgym/{self.game_info.id}-v{self.game_info.version}",
                             is_parallelizable=self.game_info.simultaneous)
        self.possible_agents = [f"player_{i}" for i in range(self.game.num_players)]
        self._seats = frozenset(self.possible_agents)
        self.max_steps = int(config.get("max_steps") or self.game_info.max_steps)
        self.machine = TurnMachine(self.game, self.possible_agents, self.max_steps)
        self.views = Views(self.machine)
        # Spaces are made when first asked for and kept per agent: api_test checks they are
        # the same object on every call.
        self._observation_spaces: dict = {}
        self._action_spaces: dict = {}
        self.agents = []

    # ------------------------------------------------------------------ the machine's state
    @property
    def state(self) -> Optional[State]:
        """The episode's :class:`State` (None before the first reset). Assigning another one
        (a snapshot restored by hand) is a change of the machine: views follow it."""
        return self.machine.state

    @state.setter
    def state(self, state: State) -> None:
        self.machine.replace_state(state)

    @property
    def turns(self) -> list:
        return self.machine.turns

    @property
    def invalid_counts(self) -> dict:
        return self.machine.invalid_counts

    @property
    def seed_value(self) -> int:
        return self.machine.seed_value

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent):
        if agent not in self._observation_spaces:
            self._observation_spaces[agent] = spaces.Dict({"text": _text_space(MAX_OBSERVATION_CHARS, 1)})
        return self._observation_spaces[agent]

    def action_space(self, agent):
        if agent not in self._action_spaces:
            self._action_spaces[agent] = _text_space(MAX_ACTION_CHARS, 0)
        return self._action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        """Start an episode. ``options`` may hold ``episode_id`` (a string; default
        ``<game>-<seed>``) and ``names`` (the public names to keep, for branching); any other key
        is ignored with a warning; a non-dict or a non-string id is a TypeError."""
        options = check_reset_options(options)
        if seed is None:
            # Draw a seed so that even an unseeded episode is reproducible from its log.
            seed = random.SystemRandom().randrange(2**31)
        seed = check_seed(seed)
        self.episode_id = encodable(options.get("episode_id", f"{self.game_info.id}-{seed}"))
        self.machine.reset(seed, options.get("names"))       # "names": keep given public names (branching)
        start_aec_episode(self)
        self._after_transition()

    # ------------------------------------------------------------------ views
    def pending_actors(self) -> list[str]:
        """Seats that still have to act in the current phase, in order. In a simultaneous
        phase their decisions are independent, so a runner may ask for all of them at once."""
        if self.machine.state is None or self.machine.state.finished or not self.agents:
            return []
        return list(self.machine.pending_actors())

    def actors_public(self) -> bool:
        """Whether who is to act now may be told to every seat and watcher: yes, except in a
        hidden-role game's phase whose actors are not every seat in play (a night kill, the
        seer's look), where naming the actors -- or saying who is thinking -- gives their roles
        away. Front ends (the browser arena, the terminal table) ask before naming anyone."""
        state = self.machine.state
        if state is None or state.finished or self.game_info.information != "hidden_roles":
            return True
        phase = self.game.phase(state.phase)
        in_play = {a for a in self.possible_agents if phase.allow_eliminated or state.seat[a].alive}
        return set(self.machine.phase_actors) >= in_play

    def check_agent(self, agent) -> str:
        """``agent`` if it is a seat of this game, else UnknownAgentError naming the seats."""
        if isinstance(agent, str) and agent in self._seats:
            return agent
        raise UnknownAgentError(f"no seat {safe_repr(agent, 60)} in {self.game_info.id}; its seats are "
                                f"{self.possible_agents[0]} to {self.possible_agents[-1]}")

    def grammar(self, agent: str) -> Grammar:
        """The seat's legal actions now (parse, sample, enumerate, JSON schema)."""
        return self.views.grammar(self.check_agent(agent))

    def decision_view(self, agent: str) -> dict:
        """The structured view of one seat now (what ``infos[agent]`` holds when it acts)."""
        return self.views.decision_view(self.check_agent(agent))

    def _basic_info(self, agent: str) -> dict:
        return self.views.basic_info(agent)

    def prompt_parts(self, agent: str) -> dict:
        """The slots of the paper's game-play prompt (Appendix E) for one seat."""
        return self.views.prompt_parts(self.check_agent(agent))

    def observation_text(self, agent: str) -> str:
        return self.views.observation_text(self.check_agent(agent))

    def _render_observation(self, agent: str) -> str:
        return self.views.render_observation(agent)

    def _require_reset(self, what: str) -> None:
        if self.machine.state is None:
            raise EngineError(f"call reset() before {what}(): the env has no episode yet")

    def observe(self, agent):
        self._require_reset("observe")
        return {"text": self.observation_text(agent)}

    def last(self, observe: bool = True):
        self._require_reset("last")
        return super().last(observe)

    def skip_dead(self) -> None:
        """Step the dead-agent turns (``step(None)``) that PettingZoo's AEC loop requires before
        the next live seat acts, as ``agent_iter`` does."""
        while self.agents and (self.terminations[self.agent_selection] or self.truncations[self.agent_selection]):
            self.step(None)

    # ------------------------------------------------------------------ step
    def act(self, agent: str, action) -> None:
        """``step`` with a check that ``agent`` is the one selected."""
        if agent != self.agent_selection:
            raise NotYourTurnError(f"it is {self.agent_selection}'s turn, not {agent}'s")
        self.step(action)

    def step(self, action) -> None:
        if self.machine.state is None:
            raise GameOverError("call reset() before step()")
        if not self.agents:
            raise GameOverError("the episode is over; call reset() to start a new one")
        agent = begin_aec_step(self, action)
        if agent is None:
            return
        grammar = self.views.grammar(agent)
        # The fast lane: one of the finite legal list's texts is one dict look-up, the Action
        # that parsing it would give; anything else goes through the grammar's parser.
        parsed = grammar.lookup(action)
        if parsed is not None:
            self._play(agent, grammar, parsed, action)
            return
        # type(), not isinstance(): an object can claim any class through __class__ (isinstance
        # believes it), type() cannot lie. A str subclass is read as the plain string it holds
        # (its own methods may raise).
        if issubclass(type(action), str):
            action = str.__str__(action)
            raw = encodable(action)
        else:
            # never repr() an unbounded object: a >4,300-digit int or a raising __repr__ would
            # raise here, and a 1 MB bytes would be copied whole
            raw = safe_repr(action, MAX_ACTION_CHARS)
        try:
            parsed, reason = grammar.parse(action), None
        except ActionError as err:
            parsed, reason = None, encodable(clip(str(err)))
        if reason is not None and self.config.get("invalid_action", "fallback") == "raise":
            # Nothing has changed: a raised action leaves the env as it was, views included.
            raise InvalidActionError(f"{agent} in phase {self.machine.state.phase!r}: {reason}")
        self._play(agent, grammar, parsed, raw, reason)

    def step_index(self, index: int) -> None:
        """Integer actions: play the acting seat's ``index``-th legal action, in the order of
        ``infos[agent]["legal_action_list"]`` (``grammar(agent).enumerate()``), with no text
        parsed. The turn, the record and any replay are those of
        ``step(legal_action_list[index])``. A terminated or truncated seat's turn takes any
        index, as ``step(None)``. Raises ValueError when the seat's legal actions are not a
        finite list (free text) or ``index`` is outside it: that is a bug of the integer
        policy, not a move of the game, so it never goes to the invalid-action rule; so does
        an ``index`` that is not an integer (a bool, a float, a string; numpy integers and 0-d
        integer arrays are integers)."""
        if self.machine.state is None:
            raise GameOverError("call reset() before step_index()")
        if not self.agents:
            raise GameOverError("the episode is over; call reset() to start a new one")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self.step(None)
            return
        grammar = self.views.grammar(agent)
        actions = grammar.actions()
        if actions is None:
            raise ValueError(f"{agent} in phase {self.machine.state.phase!r} has no finite legal action "
                             f"list (free text); send a string with step()")
        position = as_index(index, "an action index")
        if not 0 <= position < len(actions):
            raise ValueError(f"action index {position} outside 0..{len(actions) - 1} for {agent} "
                             f"in phase {self.machine.state.phase!r}")
        begin_aec_step(self, None)
        action = actions[position]
        self._play(agent, grammar, action, action.text)

    def _play(self, agent: str, grammar: Grammar, parsed, raw: str, reason: Optional[str] = None) -> None:
        """Hand the decision to the machine (the logged observation first, if logged)."""
        observation = self.views.observation_text(agent) if self.config.get("log_observations") else None
        self.machine.play(agent, parsed, raw, reason, self.config.get("invalid_action", "fallback"), grammar, observation)
        self._after_transition()

    # ------------------------------------------------------------------ bookkeeping
    def _after_transition(self) -> None:
        state = self.machine.state
        if state.finished and state.result is None:
            self._finalize()
        if state.result is not None:
            return
        self.agent_selection = selected = self.machine.current_actor()
        self.views.issue(self.infos, self.agents, selected)

    def _finalize(self) -> None:
        result = self.machine.settle()
        rewards = result.rewards
        for agent in self.agents:
            self.rewards[agent] = rewards[agent]
            if result.truncated:
                self.truncations[agent] = True
            else:
                self.terminations[agent] = True
            info = self.views.basic_info(agent)
            info.update(score=result.scores[agent], outcome=outcome_label(rewards[agent]),
                        reward=rewards[agent], reason=result.reason)
            self.infos[agent] = info
        self._accumulate_rewards()
        self.agent_selection = self.agents[0]

    # ------------------------------------------------------------------ snapshot
    def clone(self) -> "SocialGymEnv":
        """An independent copy of the env in its current state: board, FSM position, turn log,
        rewards and the RNG. Stepping the copy never affects this env, and the copy continued
        with the same actions gives the same episode record (branching rollouts rely on it).
        Generic on purpose: a deep copy of everything except the (immutable, costly) spaces."""
        memo = {id(self._observation_spaces): {}, id(self._action_spaces): {}}
        return copy.deepcopy(self, memo)

    # ------------------------------------------------------------------ log
    def episode_record(self, policies: Optional[dict] = None, playbooks: Optional[dict] = None,
                       extra: Optional[dict] = None, playbook_ids: Optional[dict] = None) -> dict:
        """The JSONL episode record (the log format: docs/log-format.md; built by ``record.py``).
        ``policies``, ``playbooks`` and ``playbook_ids`` map seats to strings (or None); anything
        else is a TypeError."""
        for name, given in (("policies", policies), ("playbooks", playbooks), ("playbook_ids", playbook_ids)):
            check_seat_texts(given, name)
        return episode_record(self.machine, self.config, self.episode_id, policies, playbooks, extra, playbook_ids)

    def annotate_last_turn(self, **fields) -> None:
        """Attach agent-side data (model prompt, raw reply, parse attempts) to the last turn
        (lone surrogates in its strings replaced, as in the rest of the record)."""
        if self.machine.turns:
            self.machine.turns[-1].update(encodable_data(fields))

    # ------------------------------------------------------------------ render
    def render(self):
        if self.machine.state is None:
            return None
        text = "\n".join(public_transcript(self.machine.state))
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self):
        pass
