"""Rock-Paper-Scissors — 2 players, 10 rounds. Round winner +1, loser −1, tie 0.

Create: ``socialgym_env.make("rock_paper_scissors", rounds=10)``

| Action   | Beats    |
|----------|----------|
| rock     | scissors |
| paper    | rock     |
| scissors | paper    |

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

BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
MOVES = ("rock", "paper", "scissors")


def rps_payoff(a: str, b: str) -> tuple[int, int]:
    if a == b:
        return 0, 0
    return (1, -1) if BEATS[a] == b else (-1, 1)


class RockPaperScissors(MatrixGame):
    info = GameInfo(
        id="rock_paper_scissors", name="Rock-Paper-Scissors", category="normal_form", num_players=2,
        information="complete", communication="none", horizon="fixed_rounds", iteration="10 rounds",
        skills=("strategic",), outcome=TWO_PLAYER, max_steps=1000, simultaneous=True,
        description=("Each round both players show rock, paper or scissors at the same time. Rock "
                     "beats scissors, scissors beats paper, paper beats rock. The round winner "
                     "scores +1 and the loser −1; a tie scores 0. The higher total wins."))
    config_defaults = {"rounds": 10}
    choices = MOVES
    matrix = {(a, b): rps_payoff(a, b) for a in MOVES for b in MOVES}

    def goal(self, state, agent):
        return "Win more rounds than the other player."


GAME = RockPaperScissors
