"""Centipede — 2 players, 4 sub-games; the first mover alternates. Cooperative.

Create: ``socialgym_env.make("centipede", subgames=4)``

In a sub-game the mover at each node chooses ``take`` (end the sub-game) or ``pass``. Odd
nodes belong to the sub-game's first mover, even nodes to the second mover. Payoffs are
(first mover of this sub-game, second mover):

| Node | take pays | | Node | take pays |
|------|-----------|-|------|-----------|
| 1    | 2, 0      | | 4    | 5, 10     |
| 2    | 1, 4      | | 5    | 14, 8     |
| 3    | 6, 2      | | 6    | 13, 24    |

Pass at node 6 pays (24, 16). Sub-game k's first mover is seat (k−1) mod 2.
Observation (both seats the same): the payoff table, the sub-game and node, whether the seat is
the first or second mover, the running scores and the announcement of every earlier move;
``public_data`` holds sub-game, node, first mover and scores.
End: after ``subgames`` sub-games (at least 1). Turn cap: 500 decisions, a safety net far above
the 6 decisions a round the rules need; reaching it is a truncation scored on the points so far
by the outcome rule.
Reward: +1 higher cumulative score, −1 lower, 0 equal. Metric: ``coordination`` = mean share
of the tree traversed (node reached / 6). Invalid action fallback: ``take``.
Version history: v0 initial.
"""
from ..actions import ActionSpec
from ..game import Game, GameInfo, Phase, TWO_PLAYER

TAKE_PAYOFFS = {1: (2, 0), 2: (1, 4), 3: (6, 2), 4: (5, 10), 5: (14, 8), 6: (13, 24)}
PASS_AT_LAST = (24, 16)
LAST_NODE = 6


def centipede_payoff(node: int, move: str) -> tuple[int, int] | None:
    """(first mover, second mover) payoff if the sub-game ends here, else None."""
    if move == "take":
        return TAKE_PAYOFFS[node]
    return PASS_AT_LAST if node == LAST_NODE else None


class Centipede(Game):
    info = GameInfo(
        id="centipede", name="Centipede", category="economic", num_players=2,
        information="complete", communication="none", horizon="fixed_rounds", iteration="4 rounds",
        skills=("strategic", "cooperation"), outcome=TWO_PLAYER, max_steps=500, cooperative=True,
        description=("A pot grows as it is passed back and forth. In each of {subgames} sub-games the two "
                     "players alternate at nodes 1–6: the mover either takes (ending the sub-game) "
                     "or passes. Payoffs (first mover, second mover) for take at node 1..6: (2,0), "
                     "(1,4), (6,2), (5,10), (14,8), (13,24); passing at node 6 pays (24,16). Odd "
                     "nodes belong to the sub-game's first mover; the first mover alternates "
                     "between sub-games. The higher total wins."))
    config_defaults = {"subgames": 4}

    config_ranges = {"subgames": (1, None)}

    def phases(self):
        return [Phase("node", actors=lambda s: [self.mover(s)], grammar=self._specs,
                      resolve=self._resolve, fallback="take", instructions=self._instructions)]

    def first_mover(self, state):
        return state.agents[(state.round - 1) % 2]

    def mover(self, state):
        first = self.first_mover(state)
        return first if state.g.node % 2 == 1 else state.next_alive(first)

    def setup(self, state):
        state.round, state.g.node, state.g.reached = 1, 1, []
        state.announce(f"Sub-game 1 of {self.config['subgames']}: {state.name(self.first_mover(state))} moves first.")
        state.goto("node")

    def _specs(self, state, agent):
        return [ActionSpec("take", help="end the sub-game now"), ActionSpec("pass", help="let the pot grow")]

    def _instructions(self, state, agent):
        return f"Sub-game {state.round}, node {state.g.node}."

    def _resolve(self, state, actions):
        (agent, action), = actions.items()
        node = state.g.node
        payoff = centipede_payoff(node, action.type)
        state.announce(f"{state.name(agent)} chose {action.type} at node {node}.")
        if payoff is None:
            state.g.node += 1
            state.goto("node")
            return
        first = self.first_mover(state)
        second = state.next_alive(first)
        state.scores[first] += payoff[0]
        state.scores[second] += payoff[1]
        state.g.reached.append(node)
        state.announce(f"Sub-game {state.round} ends: {state.name(first)} {payoff[0]}, {state.name(second)} {payoff[1]}.")
        if state.round >= self.config["subgames"]:
            state.finish(f"after {state.round} sub-games: " +
                         ", ".join(f"{state.name(a)} {int(state.scores[a])}" for a in state.agents))
            return
        state.round += 1
        state.g.node = 1
        state.announce(f"Sub-game {state.round}: {state.name(self.first_mover(state))} moves first.")
        state.goto("node")

    def goal(self, state, agent):
        return "End with more points than the other player."

    def status(self, state, agent):
        role = "first" if agent == self.first_mover(state) else "second"
        return [f"Sub-game {state.round} of {self.config['subgames']}, node {state.g.node}; you are the {role} mover.",
                "Scores so far: " + ", ".join(f"{state.name(a)} {int(state.scores[a])}" for a in state.agents)]

    def public_data(self, state, agent):
        return {"subgame": state.round, "node": state.g.node, "first_mover": self.first_mover(state),
                "scores": dict(state.scores)}

    def metrics(self, state):
        return {"coordination": (sum(state.g.reached) / (LAST_NODE * len(state.g.reached))) if state.g.reached else 0.0}


GAME = Centipede
