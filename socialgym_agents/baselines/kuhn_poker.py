"""Kuhn poker baseline: one of the game's Nash equilibria (Kuhn, 1950), played by sampling.

With α = ``ALPHA`` (any α in [0, 1/3] is an equilibrium):

| seat     | situation                | J            | Q            | K      |
|----------|--------------------------|--------------|--------------|--------|
| player_0 | opening                  | bet α        | check        | bet 3α |
| player_0 | after check, facing bet  | fold         | call α + 1/3 | call   |
| player_1 | after a check            | bet 1/3      | check        | bet    |
| player_1 | facing a bet             | fold         | call 1/3     | call   |

:func:`action_probabilities` gives the mixed strategy as a dict over the legal action words, so
the OpenSpiel bridge measures its exploitability exactly (0 up to rounding) instead of sampling it.
"""
from __future__ import annotations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

ALPHA = 1 / 6


def action_probabilities(game_state: dict) -> dict:
    """{action word: probability} at one decision, from the seat's ``game_state``."""
    card, moves = game_state["my_card"], game_state["history"][0]
    if not moves:                                     # player_0 opens
        bet = {"J": ALPHA, "Q": 0.0, "K": 3 * ALPHA}[card]
        return {"check": 1 - bet, "bet": bet}
    if moves == ["check"]:                            # player_1 after a check
        bet = {"J": 1 / 3, "Q": 0.0, "K": 1.0}[card]
        return {"check": 1 - bet, "bet": bet}
    if moves == ["bet"]:                              # player_1 facing a bet
        call = {"J": 0.0, "Q": 1 / 3, "K": 1.0}[card]
    else:                                             # player_0 after check, bet
        call = {"J": 0.0, "Q": ALPHA + 1 / 3, "K": 1.0}[card]
    return {"call": call, "fold": 1 - call}


class TabularPokerBaseline(BasePolicy):
    """Plays ``strategy(game_state)`` (a dict over action words) by drawing from the seat's RNG."""

    policy_id = "scripted:heuristic:poker"

    @staticmethod
    def strategy(game_state: dict) -> dict:
        raise NotImplementedError

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        legal = info.get("legal_action_list") or []
        game_state = info.get("game_state") or {}
        if "my_card" not in game_state or not legal:
            return Decision(sample_from_info(info, rng))
        probabilities = self.strategy(game_state)
        weights = [probabilities.get(move, 0.0) for move in legal]
        if sum(weights) <= 0:
            return Decision(sample_from_info(info, rng))
        return Decision(rng.choices(legal, weights=weights)[0])


class KuhnPokerBaseline(TabularPokerBaseline):
    policy_id = "scripted:heuristic:kuhn_poker"
    strategy = staticmethod(action_probabilities)


POLICY = KuhnPokerBaseline
