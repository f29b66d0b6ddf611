"""Minority Game — 5 players, 12 rounds, simultaneous ``go`` / ``stay``.

Create: ``socialgym_env.make("minority_game", rounds=12)``

| Round outcome                              | Payoff                         |
|--------------------------------------------|--------------------------------|
| one side strictly smaller                  | 3 to each member of that side  |
| sides equal, or everybody chose the same   | 0 to everyone                  |

Setup: no roles; scores start at 0. Each round all five moves are chosen blind and revealed
together.
Observation (every seat the same): the description, the round, the running scores and every
revealed past round; ``public_data`` holds round, rounds, history and scores.
End: after ``rounds`` rounds (at least 1). Turn cap: 2000 decisions, a safety net far above the
5 decisions a round the rules need; reaching it is a truncation scored on the points so far by
the outcome rule.
Reward: median split on totals. Invalid action fallback: random legal move.
Version history: v0 initial.
"""
from ..actions import ActionSpec
from ..game import GameInfo, MEDIAN
from ..repeated import RepeatedMoveGame


def minority_payoffs(moves: dict) -> dict:
    goers = [a for a, m in moves.items() if m == "go"]
    stayers = [a for a, m in moves.items() if m == "stay"]
    if len(goers) < len(stayers) and goers:
        winners = set(goers)
    elif len(stayers) < len(goers) and stayers:
        winners = set(stayers)
    else:
        winners = set()
    return {a: (3 if a in winners else 0) for a in moves}


class MinorityGame(RepeatedMoveGame):
    info = GameInfo(
        id="minority_game", name="Minority Game", category="normal_form", num_players=5,
        information="complete", communication="none", horizon="fixed_rounds", iteration="12 rounds",
        skills=("strategic", "coordination"), outcome=MEDIAN, max_steps=2000, simultaneous=True,
        description=("Five players choose at the same time to go or stay. Whoever is on the "
                     "strictly smaller side earns 3 points; if everybody makes the same choice "
                     "nobody earns. Choices are revealed after each round. Scores above the "
                     "group median win."))
    config_defaults = {"rounds": 12}

    def move_specs(self, state, agent):
        return [ActionSpec("go"), ActionSpec("stay")]

    def payoffs(self, state, moves):
        return minority_payoffs({a: m.type for a, m in moves.items()})

    def goal(self, state, agent):
        return "Be in the minority as often as you can; score above the group median."


GAME = MinorityGame
