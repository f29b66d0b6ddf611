"""Public Goods — 4 players, 10 rounds, endowment 10 per round. Cooperative.

Create: ``socialgym_env.make("public_goods", rounds=10)``

| Action         | Meaning                                            |
|----------------|----------------------------------------------------|
| contribute N   | put N of your 10 (0–10) in the pot, privately       |

Payoff each round: ``(10 − c_i) + 1.5 · Σc / 4``. All contributions are revealed after the
round.

Setup: no roles; scores start at 0; each round every seat gets a fresh endowment of 10 (coins
not contributed are kept as that round's points). Observation (every seat the same): the
description, the round, the running scores and every revealed past round; ``public_data`` holds
round, rounds, history and scores.
End: after ``rounds`` rounds (at least 1). Turn cap: 2000 decisions, a safety net far above the
4 decisions a round the rules need; reaching it is a truncation scored on the points so far by
the outcome rule.
Reward: median split on totals. Metric: ``coordination`` = mean share of the endowment
contributed. Invalid action fallback: ``contribute 0`` (keep everything, the neutral choice).
Version history: v0 initial.
"""
from ..actions import ActionSpec, Int
from ..game import GameInfo, MEDIAN
from ..repeated import RepeatedMoveGame

ENDOWMENT = 10
MULTIPLIER = 1.5


def public_goods_payoffs(contributions: dict) -> dict:
    share = MULTIPLIER * sum(contributions.values()) / len(contributions)
    return {a: (ENDOWMENT - c) + share for a, c in contributions.items()}


class PublicGoods(RepeatedMoveGame):
    info = GameInfo(
        id="public_goods", name="Public Goods", category="economic", num_players=4,
        information="hidden_state", communication="none", horizon="fixed_rounds", iteration="10 rounds",
        skills=("strategic", "cooperation"), outcome=MEDIAN, max_steps=2000, cooperative=True,
        simultaneous=True,
        description=("Each round every player receives 10 coins and privately chooses how many "
                     "(0–10) to put into a common pot. The pot is multiplied by 1.5 and shared "
                     "equally among the 4 players; coins kept are yours. Payoff = (10 − your "
                     "contribution) + 1.5 × total contributions / 4. Contributions are revealed "
                     "after each round. Scores above the group median win."))
    config_defaults = {"rounds": 10}
    move_instructions = "Choose how many of your 10 coins to contribute."

    move_fallback = "contribute 0"

    def move_specs(self, state, agent):
        return [ActionSpec("contribute", (Int(0, ENDOWMENT),), help="coins you put in the pot")]

    def payoffs(self, state, moves):
        return public_goods_payoffs({a: m.arg for a, m in moves.items()})

    def goal(self, state, agent):
        return "Score above the group median."

    def metrics(self, state):
        given = [int(m.split()[1]) for r in state.g.history for m in r.values()]
        return {"coordination": (sum(given) / (ENDOWMENT * len(given))) if given else 0.0}


GAME = PublicGoods
