"""Game state shared by every game: seats, roles, the message board, the FSM pointer, the result.

Rules are plain functions over a :class:`State`; they never touch the PettingZoo env. A game
keeps its own bookkeeping in ``state.g`` (a namespace), everything else here is generic.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Iterable, Optional, Sequence

PUBLIC = "public"
TEAM = "team"
PRIVATE = "private"
TARGETED = "targeted"
MODERATOR = "Moderator"


@dataclass
class Seat:
    """One player: agent id, display name, role and team, and whether it is still in the game."""

    agent: str
    index: int
    name: str
    role: str = "player"
    team: str = ""
    alive: bool = True


@dataclass(frozen=True, init=False)
class Message:
    """One entry of the board. ``receivers`` is resolved when posted, so later deaths or role
    changes never widen who saw it."""

    index: int
    step: int
    round: int
    phase: str
    sender: Optional[str]  # agent id, or None for the moderator (the env)
    text: str
    visibility: str
    receivers: tuple

    def __init__(self, index: int, step: int, round: int, phase: str, sender: Optional[str], text: str,
                 visibility: str, receivers: tuple):
        # Not the frozen dataclass's __init__ (object.__setattr__ per field, twice as slow):
        # every post makes one.
        fields = self.__dict__
        fields["index"], fields["step"], fields["round"], fields["phase"] = index, step, round, phase
        fields["sender"], fields["text"], fields["visibility"], fields["receivers"] = sender, text, visibility, receivers

    def to_dict(self) -> dict:
        return {"index": self.index, "step": self.step, "round": self.round, "phase": self.phase,
                "sender": self.sender, "text": self.text, "visibility": self.visibility,
                "receivers": list(self.receivers)}


@dataclass
class Result:
    """How the episode ended. ``rewards`` are the {-1, 0, +1} outcome rewards."""

    scores: dict
    rewards: dict
    reason: str
    truncated: bool = False
    winners: tuple = ()


class State:
    """Everything an episode's rules read and write. The engine creates it at ``reset`` (seats
    dealt, names drawn, ``rng`` seeded) and hands it to every Game hook and Phase function.

    Fields:
        game_id, config:  the game's id and its checked config (defaults merged in).
        seats, seat:      the :class:`Seat` list in seat order, and the same by agent id.
        rng:              the episode's ``random.Random`` (seeded by ``reset``); the only
                          randomness a game may use, so a seed replays byte for byte.
        phase:            the current phase's name (set with :meth:`goto`).
        round:            the game's round / day counter, shown in ``infos`` and logs; the game
                          sets it (the engine never does).
        step:             decisions taken so far (the turn cap counts these).
        phase_entries:    how many times a phase was entered (lets a game tell a re-entered
                          phase from the same one).
        messages:         the board, every :class:`Message` posted, in order.
        scores:           raw points per agent id (``infos[agent]["score"]``).
        result:           the :class:`Result` once the episode has ended, else None.
        g:                a namespace for the game's own bookkeeping (``state.g.pot = 0``).

    Reading an action: a phase's ``resolve(state, actions)`` gets ``{agent: Action}`` and its
    ``on_action(state, agent, action)`` one :class:`~socialgym_env.actions.Action`, already
    parsed and legal: ``action.type`` is the keyword, ``action.arg`` the first argument's
    value (an int for ``Int``, an agent id for ``Player``, the text for ``Text``),
    ``action.values`` all of them, ``action.text`` the canonical string.
    """

    def __init__(self, game_id: str, config: dict, seats: list[Seat], rng: random.Random):
        self.game_id = game_id
        self.config = config
        self.seats = seats
        self.seat = {s.agent: s for s in seats}
        self._agent_ids = tuple(s.agent for s in seats)     # seats never change in an episode
        self.rng = rng
        self.phase = ""
        self.round = 0
        self.step = 0
        self.phase_entries = 0
        self.messages: list[Message] = []
        self.scores = {s.agent: 0.0 for s in seats}
        self.result: Optional[Result] = None
        self.g = SimpleNamespace()
        self._pending_finish: Optional[dict] = None

    # -- seats --------------------------------------------------------------------------
    @property
    def agents(self) -> list[str]:
        return list(self._agent_ids)

    def alive(self) -> list[str]:
        return [s.agent for s in self.seats if s.alive]

    def name(self, agent: str) -> str:
        return self.seat[agent].name

    def names(self, agents: Iterable[str]) -> str:
        return ", ".join(self.name(a) for a in agents)

    def role(self, agent: str) -> str:
        return self.seat[agent].role

    def team(self, agent: str) -> str:
        return self.seat[agent].team

    def with_role(self, *roles: str, alive_only: bool = True) -> list[str]:
        return [s.agent for s in self.seats if s.role in roles and (s.alive or not alive_only)]

    def on_team(self, team: str, alive_only: bool = True) -> list[str]:
        return [s.agent for s in self.seats if s.team == team and (s.alive or not alive_only)]

    def others(self, agent: str, alive_only: bool = True) -> list[str]:
        return [s.agent for s in self.seats if s.agent != agent and (s.alive or not alive_only)]

    def eliminate(self, agent: str) -> None:
        self.seat[agent].alive = False

    def next_alive(self, agent: str, candidates: Optional[Sequence[str]] = None) -> str:
        """The next seat after ``agent`` in seat order that is alive (and in ``candidates``)."""
        n = len(self.seats)
        start = self.seat[agent].index
        for offset in range(1, n + 1):
            seat = self.seats[(start + offset) % n]
            if seat.alive and (candidates is None or seat.agent in candidates):
                return seat.agent
        return agent

    # -- messages -----------------------------------------------------------------------
    def post(self, text: str, *, sender: Optional[str] = None, visibility: str = PUBLIC,
             to: Optional[Iterable[str]] = None, team: Optional[str] = None) -> Message:
        """Put a message on the board. Public messages reach every seat (the eliminated keep
        watching); team messages reach the team's seats; private/targeted reach ``to``."""
        if visibility == PUBLIC:
            receivers = tuple(self.agents)
        elif visibility == TEAM:
            if team is None:
                team = self.team(sender) if sender else None
            if not team:
                raise ValueError("a team message needs a team")
            receivers = tuple(self.on_team(team, alive_only=False))
        elif visibility in (PRIVATE, TARGETED):
            receivers = tuple(a for a in self.agents if a in set(to or ()))
            if not receivers:
                raise ValueError(f"a {visibility} message needs receivers")
        else:
            raise ValueError(f"unknown visibility {visibility!r}")
        message = Message(len(self.messages), self.step, self.round, self.phase, sender, text,
                          visibility, receivers)
        self.messages.append(message)
        return message

    def announce(self, text: str) -> Message:
        return self.post(text)

    def tell(self, agent: str, text: str) -> Message:
        return self.post(text, visibility=PRIVATE, to=[agent])

    def tell_team(self, team: str, text: str, sender: Optional[str] = None) -> Message:
        return self.post(text, sender=sender, visibility=TEAM, team=team)

    def say(self, agent: str, text: str) -> Message:
        """A player's public utterance."""
        return self.post(text, sender=agent)

    def visible_to(self, agent: str) -> list[Message]:
        return [m for m in self.messages if agent in m.receivers]

    # -- flow -----------------------------------------------------------------------------
    def goto(self, phase: str) -> None:
        self.phase = phase
        self.phase_entries += 1

    def finish(self, reason: str, *, scores: Optional[dict] = None, winners: Iterable[str] = (),
               rewards: Optional[dict] = None, truncated: bool = False) -> None:
        """End the episode. Give ``winners`` (agent ids) for team and winner-take-all games,
        ``scores`` for score-compared games, or explicit ``rewards``; the engine turns them into
        outcome rewards by the game's outcome rule."""
        if scores is not None:
            self.scores = {a: float(scores[a]) for a in self.agents}
        self._pending_finish = {"reason": reason, "winners": tuple(a for a in self.agents if a in set(winners)),
                                "rewards": rewards, "truncated": truncated}

    @property
    def finished(self) -> bool:
        return self._pending_finish is not None or self.result is not None
