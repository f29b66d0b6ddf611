"""Bargaining (iterated ultimatum) — 2 players, 10 rounds over a pie of 10.

Create: ``socialgym_env.make("bargaining", rounds=10)``

The proposer alternates (seat 0 in odd rounds).

| Phase    | Who       | Actions                                                   |
|----------|-----------|-----------------------------------------------------------|
| propose  | proposer  | ``propose N`` — N (0–10) is what the proposer KEEPS        |
| respond  | responder | ``accept`` (proposer N, responder 10−N) / ``reject`` (0, 0) |

Observation (both seats the same): the rules, the round and its proposer, the running scores and
the announcement of every earlier offer and answer; ``public_data`` holds the offer on the
table.
End: after ``rounds`` rounds (at least 1). Turn cap: 500 decisions, a safety net far above the 2
decisions a round the rules need; reaching it is a truncation scored on the points so far by the
outcome rule.
Reward: +1 higher total, −1 lower, 0 equal. Invalid action fallbacks: ``propose 5`` for the
proposer, ``reject`` for the responder (nobody is paid on a broken reply).
Version history: v0 initial.
"""
from ..actions import ActionSpec, Int
from ..game import Game, GameInfo, Phase, TWO_PLAYER

PIE = 10


def ultimatum_payoff(keep: int, accepted: bool) -> tuple[int, int]:
    """(proposer, responder)."""
    return (keep, PIE - keep) if accepted else (0, 0)


class Bargaining(Game):
    info = GameInfo(
        id="bargaining", name="Bargaining", category="economic", num_players=2,
        information="complete", communication="none", horizon="fixed_rounds", iteration="10 rounds",
        skills=("strategic", "negotiation"), outcome=TWO_PLAYER, max_steps=500,
        description=("Two players split a pie of 10 coins, {rounds} times. The proposer (alternating each "
                     "round) says how many coins they KEEP for themselves (0–10); the other player "
                     "gets the rest. The responder accepts (both are paid) or rejects (both get "
                     "0 this round). The higher total wins."))
    config_defaults = {"rounds": 10}

    config_ranges = {"rounds": (1, None)}

    def proposer(self, state):
        return state.agents[(state.round - 1) % 2]

    def responder(self, state):
        return state.agents[state.round % 2]

    def phases(self):
        return [
            Phase("propose", actors=lambda s: [self.proposer(s)], resolve=self._proposed,
                  grammar=lambda s, a: [ActionSpec("propose", (Int(0, PIE),),
                                                   help=f"N is how many of the {PIE} coins YOU keep")],
                  fallback="propose 5", instructions=lambda s, a: f"Round {s.round}: propose a split."),
            Phase("respond", actors=lambda s: [self.responder(s)], resolve=self._responded,
                  grammar=lambda s, a: [ActionSpec("accept", help="take the offer"),
                                        ActionSpec("reject", help="both get nothing this round")],
                  fallback="reject", instructions=self._respond_instructions),
        ]

    def setup(self, state):
        state.round = 1
        state.goto("propose")

    def _proposed(self, state, actions):
        (agent, action), = actions.items()
        state.g.keep = action.arg
        state.announce(f"Round {state.round}: {state.name(agent)} proposes to keep {action.arg} and give "
                       f"{PIE - action.arg} to {state.name(self.responder(state))}.")
        state.goto("respond")

    def _respond_instructions(self, state, agent):
        return (f"{state.name(self.proposer(state))} keeps {state.g.keep}; you would get {PIE - state.g.keep}. "
                f"Accept or reject.")

    def _responded(self, state, actions):
        (agent, action), = actions.items()
        proposer = self.proposer(state)
        pay_proposer, pay_responder = ultimatum_payoff(state.g.keep, action.type == "accept")
        state.scores[proposer] += pay_proposer
        state.scores[agent] += pay_responder
        state.announce(f"{state.name(agent)} {action.type}s: {state.name(proposer)} {pay_proposer}, "
                       f"{state.name(agent)} {pay_responder}.")
        if state.round >= self.config["rounds"]:
            state.finish(f"after {state.round} rounds: " +
                         ", ".join(f"{state.name(a)} {int(state.scores[a])}" for a in state.agents))
            return
        state.round += 1
        state.goto("propose")

    def goal(self, state, agent):
        return "End with more coins than the other player."

    def status(self, state, agent):
        return [f"Round {state.round} of {self.config['rounds']}; proposer: {state.name(self.proposer(state))}.",
                "Scores so far: " + ", ".join(f"{state.name(a)} {int(state.scores[a])}" for a in state.agents)]

    def public_data(self, state, agent):
        return {"round": state.round, "proposer": self.proposer(state), "scores": dict(state.scores),
                "offer_keep": getattr(state.g, "keep", None)}


GAME = Bargaining
