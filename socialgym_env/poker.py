"""Small two-player limit poker for game authors: the betting rounds Kuhn and Leduc poker share.

A :class:`LimitPoker` subclass declares its deck (ranks, with repeats for suits), the bet size
of each betting round (``bet_sizes``: one entry per round; a board card is dealt before every
round after the first), the most bets a round may hold (``max_bets``: a bet plus raises) and
how a showdown is decided (:meth:`LimitPoker.hand_strength`). Everything else is shared:

* both players ante 1; each gets one private card; ``player_0`` acts first in every round;
* no bet standing: ``check`` or ``bet``; facing a bet: ``call``, ``fold`` or (while the round
  has fewer than ``max_bets`` bets) ``raise``. A bet or raise adds the round's bet size on top
  of what calling costs;
* a round ends on a call or on two checks; the last round's end is the showdown; a fold ends
  the hand at once and the other player takes the pot;
* ``state.scores`` are the chips won or lost (what OpenSpiel's returns are); the outcome reward
  is their sign (+1 / 0 / -1, a split pot 0).

The config ``deal`` ("" = shuffled) fixes the cards, player_0's first, then player_1's, then
the board cards, e.g. ``"KQ"`` in Kuhn poker or ``"KQJ"`` in Leduc poker: tests and the
OpenSpiel bridge (``socialgym_agents/openspiel_bridge.py``) replay every deal this way.
"""
from __future__ import annotations

from collections import Counter

from .actions import ActionSpec
from .game import Game, Phase
from .state import State

ANTE = 1


class LimitPoker(Game):
    deck: tuple = ()            # ranks, lowest first; a rank repeated once per suit
    bet_sizes: tuple = (1,)     # per betting round
    max_bets: int = 1           # bets (the first bet plus raises) allowed per round
    config_defaults = {"deal": ""}

    # ------------------------------------------------------------------ rules to declare
    def hand_strength(self, card: str, board: list) -> tuple:
        """A comparable strength of a private card with the board; the higher wins."""
        raise NotImplementedError

    # ------------------------------------------------------------------ pure rules
    @property
    def ranks(self) -> list:
        return sorted(set(self.deck), key=self.deck.index)

    @property
    def cards_dealt(self) -> int:
        return 2 + len(self.bet_sizes) - 1

    @classmethod
    def validate_config(cls, config: dict) -> None:
        deal = config.get("deal", "")
        if not deal:
            return
        game = cls.__new__(cls)         # the class's pure rules only; no phases needed
        if len(deal) != game.cards_dealt:
            raise ValueError(f"deal must name {game.cards_dealt} cards (player_0, player_1"
                             f"{', then the board' if game.cards_dealt > 2 else ''}), got {deal!r}")
        extra = Counter(deal) - Counter(cls.deck)
        if extra:
            raise ValueError(f"deal {deal!r} uses cards the deck ({' '.join(cls.deck)}) does not hold: "
                             f"{' '.join(sorted(extra.elements()))}")

    def legal_moves(self, g) -> list:
        """The action words open to the player to move, in a fixed order."""
        if g.facing == 0:
            return ["check", "bet"]
        moves = ["call", "fold"]
        if g.bets < self.max_bets:
            moves.append("raise")
        return moves

    # ------------------------------------------------------------------ flow
    def phases(self):
        return [Phase("bet", actors=lambda s: [s.g.to_act], grammar=self._specs, resolve=self._resolve,
                      fallback=self._fallback, instructions=self._instructions)]

    def setup(self, state: State) -> None:
        g = state.g
        deal = self.config.get("deal") or ""
        cards = list(deal) if deal else state.rng.sample(list(self.deck), self.cards_dealt)
        p0, p1 = state.agents
        g.cards = {p0: cards[0], p1: cards[1]}
        g.board_pending = cards[2:]
        g.board = []
        g.put_in = {p0: ANTE, p1: ANTE}
        g.history = [[]]              # per betting round: the action words in order
        g.to_act = p0
        self._start_round(state)
        state.announce(f"Both players ante {ANTE}. Each is dealt one private card. {state.name(p0)} acts first.")
        for agent in state.agents:
            state.tell(agent, f"Your card is {g.cards[agent]}.")
        state.goto("bet")

    def _start_round(self, state: State) -> None:
        g = state.g
        state.round += 1
        g.facing = 0                  # chips the player to move must add to call
        g.bets = 0
        g.checks = 0
        g.to_act = state.agents[0]

    def _specs(self, state: State, agent: str):
        g = state.g
        size = self.bet_sizes[state.round - 1]
        helps = {"check": "bet nothing; the turn passes", "bet": f"put in {size} chip(s)",
                 "call": f"put in {g.facing} chip(s) to match the bet", "fold": "give up the hand and the pot",
                 "raise": f"put in {g.facing + size} chip(s): call and bet {size} more"}
        return [ActionSpec(move, help=helps[move]) for move in self.legal_moves(g)]

    def _fallback(self, state: State, agent: str) -> str:
        return "check" if state.g.facing == 0 else "fold"

    def _instructions(self, state: State, agent: str) -> str:
        g = state.g
        if g.facing == 0:
            return f"Betting round {state.round}: no bet stands. Check or bet {self.bet_sizes[state.round - 1]}."
        return f"Betting round {state.round}: calling costs {g.facing}. Call, fold" + \
            (" or raise." if g.bets < self.max_bets else ".")

    def _resolve(self, state: State, actions: dict) -> None:
        g = state.g
        (agent, action), = actions.items()
        move, other = action.type, state.others(agent)[0]
        size = self.bet_sizes[state.round - 1]
        g.history[-1].append(move)
        if move == "fold":
            state.announce(f"{state.name(agent)} folds.")
            self._pay(state, winner=other, reason=f"{state.name(agent)} folded")
            return
        if move == "check":
            g.checks += 1
            state.announce(f"{state.name(agent)} checks.")
            closed = g.checks == 2
        elif move == "call":
            g.put_in[agent] += g.facing
            state.announce(f"{state.name(agent)} calls {g.facing}.")
            g.facing, closed = 0, True
        else:                          # bet or raise
            added = g.facing + size
            g.put_in[agent] += added
            g.bets += 1
            g.facing = size
            state.announce(f"{state.name(agent)} {'bets' if move == 'bet' else 'raises'} "
                           f"(puts in {added}; pot {self.pot(state)}).")
            closed = False
        if not closed:
            g.to_act = other
            state.goto("bet")
            return
        if g.board_pending:
            card = g.board_pending.pop(0)
            g.board.append(card)
            g.history.append([])
            self._start_round(state)
            state.announce(f"Betting round {state.round - 1} is over. The board card is {card}. "
                           f"Betting round {state.round}: {state.name(g.to_act)} acts first.")
            state.goto("bet")
            return
        self._showdown(state)

    def _showdown(self, state: State) -> None:
        g = state.g
        p0, p1 = state.agents
        shown = f"{state.name(p0)} shows {g.cards[p0]}, {state.name(p1)} shows {g.cards[p1]}"
        strength = {a: self.hand_strength(g.cards[a], g.board) for a in state.agents}
        if strength[p0] == strength[p1]:
            state.announce(f"Showdown: {shown}. A tie: the pot is split.")
            state.finish(f"showdown: {shown}; split pot", scores={p0: 0, p1: 0})
            return
        winner = p0 if strength[p0] > strength[p1] else p1
        state.announce(f"Showdown: {shown}. {state.name(winner)} wins the pot of {self.pot(state)}.")
        self._pay(state, winner, f"showdown: {shown}")

    def _pay(self, state: State, winner: str, reason: str) -> None:
        g = state.g
        loser = state.others(winner)[0]
        won = g.put_in[loser]
        state.finish(f"{reason}; {state.name(winner)} wins {won} chip(s)", scores={winner: won, loser: -won})

    def pot(self, state: State) -> int:
        return sum(state.g.put_in.values())

    # ------------------------------------------------------------------ text hooks
    def goal(self, state, agent):
        return "Win chips: end the hand with more chips than you started with."

    def secret(self, state, agent):
        return [f"Your card: {state.g.cards[agent]}."]

    def status(self, state, agent):
        g = state.g
        other = state.others(agent)[0]
        lines = [f"Betting round {state.round} of {len(self.bet_sizes)}. Pot: {self.pot(state)} "
                 f"(you put in {g.put_in[agent]}, {state.name(other)} {g.put_in[other]})."]
        if len(self.bet_sizes) > 1:
            lines.append(f"Board card: {' '.join(g.board) if g.board else 'not dealt yet'}.")
        return lines

    def public_data(self, state, agent):
        g = state.g
        return {"my_card": g.cards[agent], "board": list(g.board), "history": [list(r) for r in g.history],
                "betting_round": state.round, "to_call": g.facing if g.to_act == agent else 0,
                "pot": self.pot(state), "put_in": dict(g.put_in), "ranks": self.ranks,
                "bets_this_round": g.bets, "max_bets": self.max_bets}

    def metrics(self, state):
        history = state.g.history
        moves = [m for r in history for m in r]
        return {"betting_rounds": len(history), "bets": sum(m in ("bet", "raise") for m in moves),
                "folded": "fold" in moves}
