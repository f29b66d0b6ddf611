"""Stag Hunt — 4 players, 10 rounds, simultaneous ``stag`` / ``hare``. Cooperative.

Create: ``socialgym_env.make("stag_hunt", rounds=10)``

| Round outcome          | Payoff                                  |
|------------------------|-----------------------------------------|
| everyone hunts stag    | 5 each                                  |
| otherwise              | each hare hunter 2, each stag hunter 0  |

Setup: no roles; scores start at 0. Each round all four moves are chosen blind and revealed
together.
Observation (every seat the same): the description, the round, the running scores and every
revealed past round; ``public_data`` holds round, rounds, history and scores.
End: after ``rounds`` rounds (at least 1). Turn cap: 2000 decisions, a safety net far above the
4 decisions a round the rules need; reaching it is a truncation scored on the points so far by
the outcome rule.
Reward: median split on totals (above the median +1, below −1, equal 0; no seat-order
tie-breaks). Metric: ``coordination`` = share of rounds in which everyone hunted stag.
Invalid action fallback: random legal move. Version history: v0 initial.
"""
from ..actions import ActionSpec
from ..game import GameInfo, MEDIAN
from ..repeated import RepeatedMoveGame


MOVES = (ActionSpec("stag", help="hunt the stag together"), ActionSpec("hare", help="hunt a hare alone"))


def stag_hunt_payoffs(moves: dict) -> dict:
    if all(m == "stag" for m in moves.values()):
        return {a: 5 for a in moves}
    return {a: (2 if m == "hare" else 0) for a, m in moves.items()}


class StagHunt(RepeatedMoveGame):
    info = GameInfo(
        id="stag_hunt", name="Stag Hunt", category="normal_form", num_players=4,
        information="complete", communication="none", horizon="fixed_rounds", iteration="10 rounds",
        skills=("strategic", "cooperation", "coordination"), outcome=MEDIAN, max_steps=2000,
        cooperative=True, simultaneous=True,
        description=("Four hunters choose at the same time to hunt the stag or a hare. The stag is "
                     "caught only if all four hunt it: then everyone gets 5. Otherwise each hare "
                     "hunter gets 2 and each stag hunter gets 0. Choices are revealed after each "
                     "round. Scores above the group median win."))
    config_defaults = {"rounds": 10}

    def move_specs(self, state, agent):
        return list(MOVES)

    def payoffs(self, state, moves):
        return stag_hunt_payoffs({a: m.type for a, m in moves.items()})

    def goal(self, state, agent):
        return "Score above the group median."

    def metrics(self, state):
        rounds = len(state.g.history) or 1
        all_stag = sum(all(m == "stag" for m in r.values()) for r in state.g.history)
        return {"coordination": all_stag / rounds}


GAME = StagHunt
