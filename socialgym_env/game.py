"""What a game declares: metadata, config defaults, roles, phases and the rule hooks.

A game module subclasses :class:`Game`, fills in :class:`GameInfo` (a row of the paper's
Table 5) and returns its phases from :meth:`Game.phases`. The engine (``env.py``) runs them;
no game-specific code lives there.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

from .actions import Action, ActionSpec
from .errors import EngineError
from .state import State

# The outcome rules ("Outcome reward" in the shared rules, socialgym_env/games/__init__.py).
TWO_PLAYER = "two_player"        # higher score +1, lower -1, equal 0
TEAM = "team"                    # winners' team +1, everyone else -1, no winners: all 0
MEDIAN = "median"                # score above median +1, below -1, equal 0
WINNER_TAKE_ALL = "winner_take_all"  # winners +1, everyone else -1, no winners: all 0
CUSTOM = "custom"                # the game passes rewards to State.finish

CATEGORIES = ("normal_form", "economic", "bluffing", "hidden_role", "social_strategy", "control")
INFORMATION = ("complete", "hidden_state", "hidden_roles")
COMMUNICATION = ("none", "structured", "free_form")
HORIZONS = ("single_round", "fixed_rounds", "open_ended")
SKILLS = ("strategic", "cooperation", "coordination", "deception", "probabilistic", "tom",
          "negotiation", "persuasion")


@dataclass(frozen=True)
class GameInfo:
    """Per-game metadata (OpenSpiel-style): what the catalogue, the tournament and the
    rating profiles read. Checked when the class is defined (a bad value is a ValueError).

    id:            the game id (``make(id)``, ``socialgym/<id>-v<version>``); lower_snake_case.
    name:          the display name ("Liar's Dice").
    category:      one of ``CATEGORIES``: normal_form, economic, bluffing, hidden_role,
                   social_strategy, control.
    num_players:   the default seat count (``player_counts`` on the Game class lists others).
    information:   one of ``INFORMATION``: complete, hidden_state (private dice, hands, bids),
                   hidden_roles (secret roles or teams).
    communication: one of ``COMMUNICATION``: none, structured (fixed-form claims or bids),
                   free_form (``say`` text).
    horizon:       one of ``HORIZONS``: single_round, fixed_rounds, open_ended (until a side
                   wins); the tournament starts open-ended games first.
    iteration:     the same in the paper's words, free text ("5 rounds", "until elimination").
    skills:        a tuple of ``SKILLS``: strategic, cooperation, coordination, deception,
                   probabilistic, tom, negotiation, persuasion (rating profiles group by them).
    outcome:       the outcome rule: ``TWO_PLAYER``, ``TEAM``, ``MEDIAN``, ``WINNER_TAKE_ALL``
                   or ``CUSTOM`` (the game passes rewards to ``State.finish``).
    max_steps:     the turn cap in decisions; reaching it truncates the episode.
    cooperative:   reported by win rate and a ``coordination`` metric, left out of Elo.
    roles:         ``((role, count, team), ...)``; empty: every seat is "player", no team.
    main_role:     the majority / cooperative role (Elo-Main and SPaRTan's ``main`` side).
    alt_role:      the minority / deceptive role (Elo-Alt and SPaRTan's ``alt`` side).
    simultaneous:  every phase is a simultaneous move of all seats (then the env also works
                   through ``aec_to_parallel``; checked against the phases).
    rank_by:       what Elo pairs compare: "reward" (the outcome) or "score" (raw points).
    version:       bump it when the rules change, so logs of different rules never mix.
    description:   the rules as every seat's prompt states them (plain text, a few sentences);
                   ``{key}`` stands for a config value (``After {max_cycles} day-night cycles``).
    """

    id: str
    name: str
    category: str
    num_players: int
    information: str
    communication: str
    horizon: str
    iteration: str
    skills: tuple
    outcome: str
    max_steps: int
    cooperative: bool = False
    roles: tuple = ()
    main_role: Optional[str] = None
    alt_role: Optional[str] = None
    simultaneous: bool = False
    rank_by: str = "reward"
    version: int = 0
    description: str = ""

    def __post_init__(self):
        for attr, valid in (("category", CATEGORIES), ("information", INFORMATION),
                            ("communication", COMMUNICATION), ("horizon", HORIZONS)):
            if getattr(self, attr) not in valid:
                raise ValueError(f"{self.id}: {attr} must be one of {valid}")
        unknown = set(self.skills) - set(SKILLS)
        if unknown:
            raise ValueError(f"{self.id}: unknown skills {sorted(unknown)}")

    @property
    def team_game(self) -> bool:
        return self.outcome == TEAM

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "category": self.category,
                "num_players": self.num_players, "information": self.information,
                "communication": self.communication, "horizon": self.horizon,
                "iteration": self.iteration, "skills": list(self.skills), "outcome": self.outcome,
                "max_steps": self.max_steps, "cooperative": self.cooperative,
                "roles": [list(r) for r in self.roles], "main_role": self.main_role,
                "alt_role": self.alt_role, "simultaneous": self.simultaneous, "rank_by": self.rank_by,
                "version": self.version}


Fallback = Union[str, Callable[[State, str], Union[Action, str]]]

# A config key in a game's rules text, e.g. "After {max_cycles} day-night cycles" (Game.description).
_CONFIG_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, init=False)
class Phase:
    """One FSM state.

    actors:      who acts, computed on entering the phase (eliminated seats are dropped unless
                 ``allow_eliminated``); an empty list makes the phase automatic.
    grammar:     the legal actions of one actor now.
    simultaneous: True = every actor chooses blind, then ``resolve``; False = one after another
                 in ``actors`` order, ``on_action`` applied at once (later speakers see it).
    resolve:     applies the collected actions and moves the FSM (``state.goto``/``finish``).
    fallback:    the neutral action used for an invalid one: "random" (a random legal action
                 from the env's RNG), an action string such as "pass", or a function.
    instructions: a line shown to the actor about this decision.
    """

    name: str
    actors: Callable[[State], Sequence[str]]
    grammar: Callable[[State, str], Sequence[ActionSpec]]
    resolve: Callable[[State, dict], None]
    simultaneous: bool = False
    on_action: Optional[Callable[[State, str, Action], None]] = None
    fallback: Fallback = "random"
    instructions: Union[str, Callable[[State, str], str]] = ""
    allow_eliminated: bool = False

    def __init__(self, name: str, actors: Callable[[State], Sequence[str]],
                 grammar: Callable[[State, str], Sequence[ActionSpec]], resolve: Callable[[State, dict], None],
                 simultaneous: bool = False, on_action: Optional[Callable[[State, str, Action], None]] = None,
                 fallback: Fallback = "random", instructions: Union[str, Callable[[State, str], str]] = "",
                 allow_eliminated: bool = False):
        # Not the frozen dataclass's __init__ (object.__setattr__ per field, twice as slow):
        # every make() builds the game's phases.
        fields = self.__dict__
        fields["name"], fields["actors"], fields["grammar"], fields["resolve"] = name, actors, grammar, resolve
        fields["simultaneous"], fields["on_action"], fields["fallback"] = simultaneous, on_action, fallback
        fields["instructions"], fields["allow_eliminated"] = instructions, allow_eliminated


class Game:
    """Base class of every game. Subclasses set ``info`` and ``config_defaults`` and
    implement ``setup`` and ``phases``; the text hooks feed observations and prompts."""

    info: GameInfo
    config_defaults: dict = {}
    # Values a config key may take, for clear errors (key -> tuple of allowed values).
    config_choices: dict = {}
    # Numeric bounds of config keys: key -> (low, high); high None = no upper bound.
    config_ranges: dict = {}

    def __init__(self, config: dict):
        self.config = config
        self._phases = {phase.name: phase for phase in self.phases()}
        if self.info.simultaneous and not all(phase.simultaneous for phase in self._phases.values()):
            # is_parallelizable (PettingZoo) and the tournament trust this flag.
            serial = sorted(name for name, phase in self._phases.items() if not phase.simultaneous)
            raise EngineError(f"{self.info.id}: GameInfo.simultaneous=True but phases {serial} are not simultaneous")

    # -- to implement -------------------------------------------------------------------
    def setup(self, state: State) -> None:
        """Deal secrets, post the opening messages and ``state.goto`` the first phase."""
        raise NotImplementedError

    def phases(self) -> Sequence[Phase]:
        raise NotImplementedError

    @classmethod
    def validate_config(cls, config: dict) -> None:
        """Raise ValueError for values that are the right type but not allowed."""

    def role_deck(self) -> list[tuple[str, str]]:
        """The (role, team) of each seat before shuffling; default from ``info.roles``."""
        if not self.info.roles:
            return [("player", "")] * self.num_players
        deck = []
        for role, count, team in self.info.roles:
            deck.extend([(role, team)] * count)
        return deck

    def description(self, state: State) -> str:
        """The rules as every seat's prompt states them: ``info.description`` with each ``{key}``
        of the config filled in, so a rule that names a configured number (rounds, a cycle cap)
        states the number this game plays with, never the default's."""
        text = self.__dict__.get("_rules_text")
        if text is None:
            config = self.config
            text = self._rules_text = _CONFIG_FIELD.sub(
                lambda m: str(config[m[1]]) if m[1] in config else m[0], self.info.description)
        return text

    def goal(self, state: State, agent: str) -> str:
        return "Win the game."

    def secret(self, state: State, agent: str) -> list[str]:
        """Private information the seat holds right now (role card, dice, hand, word)."""
        return []

    def known_role(self, state: State, agent: str) -> tuple[str, str]:
        """The (role, team) the seat is told it has (observation, ``infos``). Default: its
        real role. A game where players do not know their own role overrides it."""
        seat = state.seat[agent]
        return seat.role, seat.team

    def on_truncation(self, state: State) -> None:
        """The game's turn-cap rule. Default (the shared rules, "Turn cap"): the outcome rule on the
        scores so far -- a draw for team and winner-take-all games, which have no winner yet --
        with a reason that says exactly what the rewards say."""
        rewards = outcome_rewards(self.info.outcome, state.agents, state.scores, ())
        if not any(rewards.values()):
            state.finish("turn cap reached: draw", truncated=True)
            return
        standing = ", ".join(f"{state.name(a)} {state.scores[a]:g}" for a in state.agents)
        ahead = state.names([a for a in state.agents if rewards[a] > 0])
        state.finish(f"turn cap reached: scored on the points so far ({standing}); ahead: {ahead}",
                     truncated=True)

    def public_data(self, state: State, agent: str) -> dict:
        """Structured, JSON-friendly facts this seat may see (for scripted agents), e.g. the
        move history of a matrix game. Never include what the seat may not know."""
        return {}

    def metrics(self, state: State) -> dict:
        """Per-episode measurements beyond the outcome (e.g. a coordination rate)."""
        return {}

    def status(self, state: State, agent: str) -> list[str]:
        """Public running status lines (scores so far, round), shown in observations."""
        return []

    # -- used by the engine -------------------------------------------------------------
    def phase(self, name: str) -> Phase:
        try:
            return self._phases[name]
        except KeyError:
            raise EngineError(f"{self.info.id}: no phase {name!r} (state.goto); the phases are "
                              f"{', '.join(self._phases)}") from None

    @property
    def num_players(self) -> int:
        return int(self.config.get("num_players", self.info.num_players))


# --------------------------------------------------------------------------------------
# Outcome rules (pure functions)
# --------------------------------------------------------------------------------------
def outcome_rewards(rule: str, agents: Sequence[str], scores: dict, winners: Sequence[str]) -> dict:
    """Terminal rewards in {-1, 0, +1} by the shared outcome rules; no seat-order tie-breaks."""
    if rule == TWO_PLAYER:
        a, b = agents
        diff = scores[a] - scores[b]
        sign = (diff > 0) - (diff < 0)
        return {a: float(sign), b: float(-sign)}
    if rule == MEDIAN:
        return median_split(scores)
    if rule in (TEAM, WINNER_TAKE_ALL):
        if not winners:
            return {a: 0.0 for a in agents}
        return {a: (1.0 if a in winners else -1.0) for a in agents}
    raise ValueError(f"outcome rule {rule!r} needs explicit rewards")


def median_split(scores: dict) -> dict:
    """Above the median +1, below -1, equal 0."""
    median = statistics.median(scores.values())
    return {a: float((s > median) - (s < median)) for a, s in scores.items()}


def outcome_label(reward: float) -> str:
    return "win" if reward > 0 else "loss" if reward < 0 else "draw"
