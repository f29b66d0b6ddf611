"""The phase/state machine of one episode: who acts, what an action does, when the game ends.

It knows nothing of PettingZoo, text rendering or JSON records. The AEC env (``env.py``) feeds
it parsed actions; the views (``views.py``) read it. Everything that changes the episode goes
through three methods -- :meth:`TurnMachine.reset`, :meth:`TurnMachine.play` and
:meth:`TurnMachine.replace_state` -- and each of them first calls ``before_change`` (the views'
hook: it seals the views issued for the state about to change) and then moves ``epoch`` on
(views cached for an older epoch are rebuilt when next asked). So no caller ever invalidates
a view by hand.

Flow: entering a phase computes its actors (eliminated seats dropped unless the phase says
``allow_eliminated``); an actor-less phase resolves at once. Sequential phases apply
``on_action`` after each actor and may branch the FSM themselves; simultaneous phases collect
blind actions and resolve together. ``resolve`` must ``state.goto`` or ``state.finish``.
"""
from __future__ import annotations

import random
from typing import Callable, Optional, Sequence

from .actions import MAX_ACTION_CHARS, Action, ActionError, Grammar
from .errors import EngineError
from .game import TEAM, TWO_PLAYER, Game, outcome_rewards
from .names import NAME_POOL
from .state import Result, Seat, State

INVALID_MODES = ("fallback", "forfeit", "raise")


def _no_views(build_all: bool) -> None:
    """The default ``before_change`` hook: nothing is cached anywhere."""


class TurnMachine:
    """The FSM position of one episode plus its turn log.

    state:         the :class:`State` (seats, board, scores, the game's ``g``, the RNG)
    epoch:         moves on at every change; views cache per epoch
    turns:         one dict per decision taken (the episode record's ``turns``)
    invalid_counts, last_invalid: per seat, for the record and the infos
    seen_upto:     per seat, the board length when it last acted (its "new messages" start there)
    """

    def __init__(self, game: Game, possible_agents: list, max_steps: int):
        self.game = game
        self.game_info = game.info
        self.possible_agents = possible_agents
        self.max_steps = max_steps
        self.state: Optional[State] = None
        self.epoch = 0
        self.before_change: Callable[[bool], None] = _no_views
        self.seed_value = 0
        self.turns: list = []
        self._phase_name: Optional[str] = None
        self._phase_object = None

    def _change(self, build_all: bool = False) -> None:
        self.before_change(build_all)
        self.epoch += 1

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int, names: Optional[Sequence[str]] = None) -> None:
        """A new episode from ``seed``: names and the role deck drawn from one RNG, the game's
        setup, the first phase entered. ``names`` (one per seat) replace the drawn names after
        the draw, so the rest of the episode is the seed's own: what branching's determinisation
        needs to re-deal the hidden part of an episode under the public names it had."""
        if self.state is not None:
            self._change()
        self.seed_value = int(seed)
        rng = random.Random(self.seed_value)
        drawn = rng.sample(NAME_POOL, len(self.possible_agents))
        if names is not None and len(names) != len(self.possible_agents):
            raise EngineError(f"{len(names)} names for {len(self.possible_agents)} seats")
        names = drawn if names is None else list(names)
        deck = self.game.role_deck()
        if len(deck) != len(self.possible_agents):
            raise EngineError(f"{self.game_info.id}: role deck has {len(deck)} cards for "
                              f"{len(self.possible_agents)} seats")
        rng.shuffle(deck)
        seats = [Seat(agent, i, names[i], role, team)
                 for i, (agent, (role, team)) in enumerate(zip(self.possible_agents, deck))]
        self.state = State(self.game_info.id, self.game.config, seats, rng)
        self.epoch += 1
        self.turns = []
        self.invalid_counts = dict.fromkeys(self.possible_agents, 0)
        self.seen_upto = dict.fromkeys(self.possible_agents, 0)
        self.last_invalid: dict = dict.fromkeys(self.possible_agents)
        self.game.setup(self.state)
        if not self.state.phase and not self.state.finished:
            raise EngineError(f"{self.game_info.id}.setup did not choose a first phase")
        self._enter_phase()

    def replace_state(self, state: State) -> None:
        """Put another State in place (a snapshot restored by hand). Views issued so far are
        built from the state they were issued for; later views follow the new one."""
        if self.state is not None:
            self._change(build_all=True)
        self.state = state

    # ------------------------------------------------------------------ FSM
    def phase(self):
        """The current phase's :class:`Phase` (looked up again only when ``state.phase``
        names another one: a game moves the FSM by ``state.goto``, which the machine cannot
        see happen, so the name is compared at each use)."""
        name = self.state.phase
        if name is not self._phase_name:
            self._phase_object = self.game.phase(name)
            self._phase_name = name
        return self._phase_object

    def _enter_phase(self) -> None:
        """Compute the actors of the current phase; run automatic (actor-less) phases."""
        state = self.state
        for _ in range(10_000):
            if state.finished:
                return
            phase = self.phase()
            actors = list(phase.actors(state)) if phase.allow_eliminated else \
                [a for a in phase.actors(state) if state.seat[a].alive]
            if actors:
                self.phase_actors = actors
                self.collected: dict[str, Action] = {}
                self.cursor = 0
                self._pending_view: Optional[list] = None
                return
            self._resolve(phase, {})
        raise EngineError(f"{self.game_info.id}: automatic phases loop forever")

    def _resolve(self, phase, actions: dict) -> None:
        entries = self.state.phase_entries
        phase.resolve(self.state, actions)
        if not self.state.finished and self.state.phase_entries == entries:
            raise EngineError(f"{self.game_info.id}: phase {phase.name!r} resolved without a next phase")

    def current_actor(self) -> Optional[str]:
        actors, cursor = self.phase_actors, self.cursor
        if cursor < len(actors) and self.state.seat[actors[cursor]].alive:
            return actors[cursor]          # the usual case: the next actor is still in the game
        allow_eliminated, seat = self.phase().allow_eliminated, self.state.seat
        while cursor < len(actors):
            agent = actors[cursor]
            if allow_eliminated or seat[agent].alive:
                self.cursor = cursor
                return agent
            cursor += 1
        self.cursor = cursor
        return None

    def pending_actors(self) -> list[str]:
        """Seats that still have to act in the current phase, in order (memoised per epoch:
        the list only changes with the state)."""
        pending = self._pending_view
        if pending is None or pending[0] != self.epoch:
            phase = self.phase()
            rest = [a for a in self.phase_actors[self.cursor:]
                    if phase.allow_eliminated or self.state.seat[a].alive]
            pending = self._pending_view = (self.epoch, rest if phase.simultaneous else rest[:1])
        return pending[1]

    # ------------------------------------------------------------------ a decision
    def play(self, agent: str, parsed: Optional[Action], raw: str, reason: Optional[str], mode: str,
             grammar: Grammar, observation: Optional[str]) -> None:
        """Apply ``agent``'s decision: ``parsed`` when it was legal, else ``reason`` says why not
        and ``mode`` ("fallback" or "forfeit") what happens. Logs the turn, moves the FSM and
        applies the turn cap. ``grammar`` is the seat's grammar of the state before."""
        state = self.state
        phase = self.phase()
        self._change()
        turn = {"step": state.step, "round": state.round, "phase": state.phase, "agent": agent,
                "raw": raw[:MAX_ACTION_CHARS], "valid": reason is None}
        if observation is not None:
            turn["observation"] = observation
        if reason is not None:
            self.last_invalid[agent] = {"raw": raw[:500], "reason": reason, "phase": state.phase, "step": state.step}
            self.invalid_counts[agent] += 1
            turn["reason"] = reason
            if mode == "forfeit":
                turn["action"] = None
                self.turns.append(turn)
                state.step += 1
                self._forfeit(agent, reason)
                return
            parsed = self._fallback(phase, agent, grammar)
            turn["fallback"] = True
        else:
            self.last_invalid[agent] = None
        turn["action"] = parsed.text
        self.turns.append(turn)
        self.seen_upto[agent] = len(state.messages)
        state.step += 1

        self.collected[agent] = parsed
        self.cursor += 1
        entries = state.phase_entries
        if not phase.simultaneous and phase.on_action is not None:
            phase.on_action(state, agent, parsed)
        if state._pending_finish is None and state.result is None:        # not state.finished
            if state.phase_entries != entries:      # on_action branched the FSM itself
                self._enter_phase()
            elif self.current_actor() is None:
                self._resolve(phase, self.collected)
                self._enter_phase()
        # The turn cap; in a simultaneous game it waits for the round's last decision, so that no
        # seat of a round is cut off while the others acted (PettingZoo's aec_to_parallel, which
        # such games declare they support, needs every seat to end together).
        mid_round = self.game_info.simultaneous and bool(self.collected) and not state.finished
        if state.step >= self.max_steps and not state.finished and not mid_round:
            self.game.on_truncation(state)
            if not state.finished:
                raise EngineError(f"{self.game_info.id}.on_truncation did not end the game")

    def _fallback(self, phase, agent: str, grammar: Grammar) -> Action:
        fallback = phase.fallback
        if callable(fallback):
            fallback = fallback(self.state, agent)
        if isinstance(fallback, Action):
            return fallback
        if isinstance(fallback, str) and fallback != "random":
            try:
                return grammar.parse(fallback)
            except ActionError:
                pass
        return grammar.sample(self.state.rng)

    def _forfeit(self, offender: str, reason: str) -> None:
        """``invalid_action="forfeit"``: the offender loses at once; in two-player and team
        games the other side wins, elsewhere the others draw."""
        state = self.state
        rule = self.game_info.outcome
        if rule == TWO_PLAYER:
            rewards = {a: (-1.0 if a == offender else 1.0) for a in state.agents}
        elif rule == TEAM:
            team = state.team(offender)
            rewards = {a: (-1.0 if state.team(a) == team else 1.0) for a in state.agents}
        else:
            rewards = {a: (-1.0 if a == offender else 0.0) for a in state.agents}
        state.finish(f"{state.name(offender)} forfeited by an invalid action ({reason})", rewards=rewards)

    # ------------------------------------------------------------------ the end
    def settle(self) -> Result:
        """The episode's result once a rule finished it: outcome rewards by the game's rule,
        the closing announcement. Called once, by the env, after the finishing transition."""
        state = self.state
        pending = state._pending_finish
        rewards = pending["rewards"]
        if rewards is None:
            rewards = outcome_rewards(self.game_info.outcome, state.agents, state.scores, pending["winners"])
        rewards = {a: float(rewards[a]) for a in state.agents}
        state.result = Result(dict(state.scores), rewards, pending["reason"], pending["truncated"],
                              pending["winners"])
        state.announce(f"Game over: {pending['reason']}.")
        return state.result
