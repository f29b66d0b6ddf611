"""Leduc poker baseline: bet by hand strength, a fixed (pure) rule.

| round | hand                          | no bet standing | facing a bet                 |
|-------|-------------------------------|-----------------|------------------------------|
| 1     | K                             | bet             | raise (call if no raise left)|
| 1     | Q                             | check           | call                         |
| 1     | J                             | check           | fold                         |
| 2     | a pair with the board         | bet             | raise (call if no raise left)|
| 2     | no pair, card above the board | check           | call                         |
| 2     | no pair, card below the board | check           | fold                         |

Its exploitability (measured by ``socialgym_benchmarks/openspiel_bridge.py``) is far above the
equilibrium's 0: it never bluffs, so a best response folds to its bets.
"""
from __future__ import annotations

from .kuhn_poker import TabularPokerBaseline

RANKS = ("J", "Q", "K")


def action_probabilities(game_state: dict) -> dict:
    """{action word: probability} (one of them 1) at one decision, from ``game_state``."""
    card, board = game_state["my_card"], game_state["board"]
    facing = game_state["to_call"] > 0
    if not board:
        strength = RANKS.index(card)                  # 2 strong, 1 medium, 0 weak
    else:
        strength = 2 if card == board[0] else (1 if RANKS.index(card) > RANKS.index(board[0]) else 0)
    if not facing:
        return {"bet": 1.0} if strength == 2 else {"check": 1.0}
    if strength == 2:
        can_raise = game_state["bets_this_round"] < game_state["max_bets"]
        return {"raise": 1.0} if can_raise else {"call": 1.0}
    return {"call": 1.0} if strength == 1 else {"fold": 1.0}


class LeducPokerBaseline(TabularPokerBaseline):
    policy_id = "scripted:heuristic:leduc_poker"
    strategy = staticmethod(action_probabilities)


POLICY = LeducPokerBaseline
