"""Repeated simultaneous-move games (the matrix games and Public Goods).

Each round every seat moves blind; the moves and payoffs are then revealed to all. A subclass
gives the move grammar and the payoff rule; this class owns rounds, scores, history and text.
"""
from __future__ import annotations

from typing import Sequence

from .actions import Action, ActionSpec
from .game import Game, Phase
from .patterns import everyone
from .state import State

MOVE = "move"


class RepeatedMoveGame(Game):
    config_defaults = {"rounds": 10}
    move_instructions = "Choose your move for this round."
    move_fallback = "random"   # the neutral move used for an invalid one

    # -- to implement ------------------------------------------------------------------
    def move_specs(self, state: State, agent: str) -> Sequence[ActionSpec]:
        raise NotImplementedError

    def payoffs(self, state: State, moves: dict) -> dict:
        """``{agent: payoff}`` for one round from ``{agent: Action}``."""
        raise NotImplementedError

    # -- hooks with defaults -------------------------------------------------------------
    def round_start_phase(self, state: State) -> str:
        return MOVE

    def extra_phases(self) -> Sequence[Phase]:
        return ()

    def move_label(self, state: State, agent: str, action: Action) -> str:
        return action.text

    def after_round(self, state: State, moves: dict, payoffs: dict) -> None:
        """Extra per-round bookkeeping (e.g. a coordination count)."""

    config_ranges = {"rounds": (1, None)}

    # -- engine side ---------------------------------------------------------------------
    def phases(self):
        move = Phase(MOVE, actors=everyone, simultaneous=True, grammar=self.move_specs,
                     resolve=self._resolve_round, instructions=self._instructions,
                     fallback=self.move_fallback)
        return [move, *self.extra_phases()]

    def _instructions(self, state, agent):
        return f"Round {state.round} of {self.config['rounds']}. {self.move_instructions}"

    def setup(self, state: State) -> None:
        state.g.history = []
        state.round = 1
        state.announce(f"The game starts: {self.config['rounds']} rounds.")
        state.goto(self.round_start_phase(state))

    def _resolve_round(self, state: State, moves: dict) -> None:
        payoffs = self.payoffs(state, moves)
        for agent, value in payoffs.items():
            state.scores[agent] += value
        seats = state.seats
        state.g.history.append({seat.agent: moves[seat.agent].text for seat in seats})
        move_label = self.move_label
        chosen = ", ".join([f"{seat.name}: {move_label(state, seat.agent, moves[seat.agent])}" for seat in seats])
        paid = ", ".join([f"{seat.name} {_num(payoffs[seat.agent])}" for seat in seats])
        state.announce(f"Round {state.round} moves — {chosen}. Payoffs — {paid}.")
        self.after_round(state, moves, payoffs)
        if state.round >= self.config["rounds"]:
            totals = ", ".join([f"{seat.name} {_num(state.scores[seat.agent])}" for seat in seats])
            state.finish(f"after {state.round} rounds the totals are {totals}")
            return
        state.round += 1
        state.goto(self.round_start_phase(state))

    def status(self, state, agent):
        # Every seat's status is the same and changes only with the round or the scores: the
        # lines are kept for the state, round and scores they were made for (a new list each
        # call, so a caller may change it).
        key = (state, state.round, *state.scores.values())
        kept = self.__dict__.get("_status_lines")
        if kept is None or kept[0] != key:
            totals = ", ".join([f"{seat.name} {_num(state.scores[seat.agent])}" for seat in state.seats])
            kept = self._status_lines = (key, (f"Round {state.round} of {self.config['rounds']}.",
                                               f"Scores so far: {totals}."))
        return list(kept[1])

    def public_data(self, state, agent):
        return {"round": state.round, "rounds": self.config["rounds"], "history": list(state.g.history),
                "scores": dict(state.scores)}


_NUM_TEXTS: dict = {}      # the few payoffs and totals a game shows, each formatted once


def _num(x: float) -> str:
    text = _NUM_TEXTS.get(x)
    if text is None:
        text = str(int(x)) if float(x).is_integer() else f"{x:.2f}"
        if len(_NUM_TEXTS) < 4096:
            _NUM_TEXTS[x] = text
    return text


_CHOICE_SPECS: dict = {}       # (MatrixGame subclass, choices, help texts) -> the move specs


class MatrixGame(RepeatedMoveGame):
    """Two-player repeated matrix game: ``matrix[(row_move, col_move)] = (row_pay, col_pay)``
    with player_0 as row."""

    choices: tuple = ()
    matrix: dict = {}
    choice_help: dict = {}

    def move_specs(self, state, agent):
        # The same specs at every decision of every env with the same choices and help (the
        # engine then finds them by identity): kept per game object, shared between objects
        # through a table keyed by them; a new list each time, so a caller may extend it.
        specs = self.__dict__.get("_choice_specs")
        if specs is None:
            help_texts = tuple(self.choice_help.get(c, "") for c in self.choices)
            key = (type(self), tuple(self.choices), help_texts)
            specs = _CHOICE_SPECS.get(key)
            if specs is None:
                if len(_CHOICE_SPECS) >= 256:
                    _CHOICE_SPECS.clear()
                specs = _CHOICE_SPECS[key] = tuple(ActionSpec(c, help=h) for c, h in zip(self.choices, help_texts))
            self._choice_specs = specs
        return list(specs)

    def payoffs(self, state, moves):
        row, col = state.agents
        pay_row, pay_col = self.matrix[(moves[row].type, moves[col].type)]
        return {row: pay_row, col: pay_col}
