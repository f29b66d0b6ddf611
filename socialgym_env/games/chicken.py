"""Chicken — 2 players, 10 rounds, simultaneous ``swerve`` / ``straight``.

Create: ``socialgym_env.make("chicken", rounds=10)``

| Moves (you, other)  | Payoff (you, other) |
|---------------------|---------------------|
| swerve, swerve      | 3, 3                |
| swerve, straight    | 1, 5                |
| straight, swerve    | 5, 1                |
| straight, straight  | 0, 0                |

Setup: no roles; scores start at 0. Each round both moves are chosen blind and revealed
together.
Observation (every seat the same): the description, the round, the running scores and every
revealed past round; ``public_data`` holds round, rounds, history and scores.
End: after ``rounds`` rounds (at least 1). Turn cap: 1000 decisions, a safety net far above the
2 decisions a round the rules need; reaching it is a truncation scored on the points so far by
the outcome rule.
Reward: +1 higher total, −1 lower, 0 equal. Invalid action fallback: random legal move.
Version history: v0 initial.
"""
from ..game import GameInfo, TWO_PLAYER
from ..repeated import MatrixGame


class Chicken(MatrixGame):
    info = GameInfo(
        id="chicken", name="Chicken", category="normal_form", num_players=2,
        information="complete", communication="none", horizon="fixed_rounds", iteration="10 rounds",
        skills=("strategic", "coordination"), outcome=TWO_PLAYER, max_steps=1000, simultaneous=True,
        description=("Two drivers head for each other. Each round both choose at the same time to "
                     "swerve or go straight. Both swerve: 3 each. One swerves, the other goes "
                     "straight: 1 for the swerver, 5 for the other. Both straight: a crash, 0 each. "
                     "The higher total score wins."))
    config_defaults = {"rounds": 10}
    choices = ("swerve", "straight")
    matrix = {("swerve", "swerve"): (3, 3), ("swerve", "straight"): (1, 5),
              ("straight", "swerve"): (5, 1), ("straight", "straight"): (0, 0)}

    def goal(self, state, agent):
        return "End with a higher total score than the other driver."


GAME = Chicken
