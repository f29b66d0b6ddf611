"""Prisoner's Dilemma — 2 players, 5 rounds, simultaneous ``cooperate`` / ``defect``.

Create: ``socialgym_env.make("prisoners_dilemma", rounds=5)``

| Action      | Meaning                           |
|-------------|-----------------------------------|
| cooperate   | stay silent / cooperate           |
| defect      | betray                            |

| Moves (you, other) | Payoff (you, other) |
|--------------------|---------------------|
| C, C               | 3, 3                |
| C, D               | 0, 5                |
| D, C               | 5, 0                |
| D, D               | 1, 1                |

Setup: no roles; scores start at 0. Each round both moves are chosen blind and revealed
together.
Observation (every seat the same): the description, the round, the running scores and every
revealed past round; ``public_data`` holds round, rounds, history and scores.
End: after ``rounds`` rounds (at least 1). Turn cap: 1000 decisions, a safety net far above the
2 decisions a round the rules need; reaching it is a truncation scored on the points so far by
the outcome rule.
Reward: +1 for the higher total, −1 for the lower, 0 on equal totals.
Invalid action fallback: a random legal move (env RNG), recorded in ``infos``.
Version history: v0 initial.
"""
from ..game import GameInfo, TWO_PLAYER
from ..repeated import MatrixGame


class PrisonersDilemma(MatrixGame):
    info = GameInfo(
        id="prisoners_dilemma", name="Prisoner's Dilemma", category="normal_form", num_players=2,
        information="complete", communication="none", horizon="fixed_rounds", iteration="5 rounds",
        skills=("strategic", "cooperation"), outcome=TWO_PLAYER, max_steps=1000, simultaneous=True,
        description=("Each round both players choose at the same time to cooperate or defect. "
                     "Both cooperate: 3 points each. Both defect: 1 point each. If one defects "
                     "and the other cooperates, the defector gets 5 and the cooperator 0. Both "
                     "choices are revealed after each round. The higher total score wins."))
    config_defaults = {"rounds": 5}
    choices = ("cooperate", "defect")
    matrix = {("cooperate", "cooperate"): (3, 3), ("cooperate", "defect"): (0, 5),
              ("defect", "cooperate"): (5, 0), ("defect", "defect"): (1, 1)}

    def goal(self, state, agent):
        return "End with a higher total score than the other player."


GAME = PrisonersDilemma
