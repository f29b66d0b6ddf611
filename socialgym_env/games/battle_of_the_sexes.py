"""Battle of the Sexes — 2 players, 10 rounds of talk then a simultaneous choice. Cooperative.

Create: ``socialgym_env.make("battle_of_the_sexes", rounds=10)``

Each episode draws two option labels (e.g. ``opera`` / ``football``) with the env's RNG; the
first label is option X, preferred by seat 0 (player_0), the second option Y, preferred by
seat 1. Each seat's prompt states its own preference in words; no person is named.

| Phase | Who                     | Actions                     |
|-------|-------------------------|-----------------------------|
| talk  | both, one message each; the first speaker alternates (seat 0 in odd rounds) | ``say TEXT`` / ``pass`` |
| move  | both, simultaneous       | ``<X label>`` / ``<Y label>`` |

| Choices (seat 0, seat 1) | Payoff (seat 0, seat 1) |
|--------------------------|-------------------------|
| X, X                     | 3, 2                    |
| Y, Y                     | 2, 3                    |
| mismatch                 | 0, 0                    |

Observation: the description with the seat's own preference, the round, the running scores, the
talk so far and every revealed past round (both choices). Talk is public; choices are blind
until both are in.
End: after ``rounds`` rounds (at least 1). Turn cap: 1000 decisions, a safety net far above the
4 decisions a round the rules need; reaching it is a truncation scored on the points so far by
the outcome rule.
Talk fallback: ``pass``.
Reward: +1 higher total, −1 lower, 0 equal. Metric: ``coordination`` = share of rounds with
matching choices. Invalid move fallback: a random legal choice (never a seat's default).
Version history: v0 initial.
"""
from ..actions import ActionSpec
from ..game import GameInfo, TWO_PLAYER
from ..patterns import rotating_from, talk_phase
from ..repeated import RepeatedMoveGame

OPTION_PAIRS = (("opera", "football"), ("concert", "cinema"), ("museum", "beach"),
                ("theatre", "stadium"), ("hiking", "shopping"), ("ballet", "boxing"),
                ("jazz", "karaoke"), ("picnic", "bowling"))


def bos_payoffs(choice_0: str, choice_1: str, option_x: str, option_y: str) -> tuple[int, int]:
    if choice_0 == choice_1 == option_x:
        return 3, 2
    if choice_0 == choice_1 == option_y:
        return 2, 3
    return 0, 0


class BattleOfTheSexes(RepeatedMoveGame):
    info = GameInfo(
        id="battle_of_the_sexes", name="Battle of the Sexes", category="normal_form", num_players=2,
        information="complete", communication="free_form", horizon="fixed_rounds", iteration="10 rounds",
        skills=("strategic", "coordination"), outcome=TWO_PLAYER, max_steps=1000, cooperative=True)
    config_defaults = {"rounds": 10}

    def setup(self, state):
        pair = list(state.rng.choice(OPTION_PAIRS))
        state.rng.shuffle(pair)
        state.g.options = tuple(pair)          # (X, Y): seat 0 prefers X
        super().setup(state)

    def round_start_phase(self, state):
        return "talk"

    def extra_phases(self):
        first = lambda state: state.agents[(state.round - 1) % 2]
        return [talk_phase("talk", lambda state: state.goto("move"), actors=rotating_from(first),
                           instructions="Say one message to the other player before you both choose.")]

    def move_specs(self, state, agent):
        return [ActionSpec(option) for option in state.g.options]

    def payoffs(self, state, moves):
        a, b = state.agents
        x, y = state.g.options
        pay_a, pay_b = bos_payoffs(moves[a].type, moves[b].type, x, y)
        return {a: pay_a, b: pay_b}

    def description(self, state):
        x, y = state.g.options
        return (f"Two players want to spend the evening together, choosing between {x} and {y}. "
                f"Each round they talk (one message each), then choose at the same time. If both "
                f"choose {x}: {state.name(state.agents[0])} gets 3 and {state.name(state.agents[1])} "
                f"gets 2. If both choose {y}: {state.name(state.agents[0])} gets 2 and "
                f"{state.name(state.agents[1])} gets 3. If they choose differently, both get 0. "
                f"The higher total score wins.")

    def goal(self, state, agent):
        x, y = state.g.options
        mine, theirs = (x, y) if agent == state.agents[0] else (y, x)
        return (f"You prefer {mine} (3 points for you if you both go) over {theirs} (2 points); "
                f"not meeting gives nothing. End with the higher total score.")

    def metrics(self, state):
        rounds = len(state.g.history) or 1
        matched = sum(len(set(r.values())) == 1 for r in state.g.history)
        return {"coordination": matched / rounds}

    def public_data(self, state, agent):
        return {**super().public_data(state, agent), "options": list(state.g.options)}


GAME = BattleOfTheSexes
