"""Lowest Unique Bid — 3 players, 3 rounds, simultaneous private bids of 1–5.

Create: ``socialgym_env.make("lowest_unique_bid", rounds=3)`` (once this package is installed,
or after ``socialgym_env.register_game("socialgym_example_game.lowest_unique_bid")``).

Setup: three seats, no roles; scores start at 0.

| Phase | Who | Actions |
|-------|-----|---------|
| bid | every seat, simultaneously and privately | ``bid N`` with N from 1 to ``max_bid`` (5) |

Round end: the seat whose bid nobody else made, lowest among such bids, scores 1 point; when
every bid is shared, nobody scores. All bids are then revealed to everyone.

What each seat sees: the rules, the round, the running scores and every revealed past round;
never another seat's bid before the round ends.

End: after ``rounds`` (3) rounds. Reward: median split on the points (above the median +1,
below −1, equal 0). Invalid-action fallback: a random legal bid (env RNG). Turn cap: 100
decisions (never reached: the game has 3 decisions a round).

Version history: v0 initial.
"""
from socialgym_env import MEDIAN, ActionSpec, Game, GameInfo, Int, Phase
from socialgym_env.patterns import everyone

BID = "bid"


def round_winner(bids: dict):
    """The seat with the lowest bid that nobody else made, or None."""
    unique = [value for value in bids.values() if list(bids.values()).count(value) == 1]
    return next((agent for agent, value in bids.items() if value == min(unique)), None) if unique else None


class LowestUniqueBid(Game):
    info = GameInfo(
        id="lowest_unique_bid", name="Lowest Unique Bid", category="normal_form", num_players=3,
        information="complete", communication="none", horizon="fixed_rounds", iteration="3 rounds",
        skills=("strategic", "coordination"), outcome=MEDIAN, max_steps=100, simultaneous=True,
        description=("Each round every player privately bids a whole number from 1 to 5. The "
                     "lowest bid that nobody else made scores 1 point; if every bid is shared, "
                     "nobody scores. Bids are revealed after each round. Scores above the "
                     "group median win."))
    config_defaults = {"rounds": 3, "max_bid": 5}
    config_ranges = {"rounds": (1, 20), "max_bid": (2, 9)}

    def setup(self, state):
        state.round = 1
        state.g.history = []
        state.announce(f"The game starts: {self.config['rounds']} rounds.")
        state.goto(BID)

    def phases(self):
        return [Phase(BID, actors=everyone, simultaneous=True, grammar=self.bid_specs, resolve=self.resolve_bids,
                      instructions="Bid a whole number; the lowest bid nobody else made scores.")]

    def bid_specs(self, state, agent):
        return [ActionSpec("bid", (Int(1, self.config["max_bid"]),), help="your bid")]

    def resolve_bids(self, state, actions):
        bids = {agent: action.arg for agent, action in actions.items()}   # Action.arg: the Int value
        winner = round_winner(bids)
        if winner is not None:
            state.scores[winner] += 1
        state.g.history.append(bids)
        shown = ", ".join(f"{state.name(a)} {bids[a]}" for a in state.agents)
        scored = f"{state.name(winner)} scores" if winner else "nobody scores"
        state.announce(f"Round {state.round} bids: {shown}; {scored}.")
        if state.round >= self.config["rounds"]:
            state.finish(f"after {state.round} rounds")
            return
        state.round += 1
        state.goto(BID)

    def status(self, state, agent):
        totals = ", ".join(f"{state.name(a)} {state.scores[a]:g}" for a in state.agents)
        return [f"Round {state.round} of {self.config['rounds']}.", f"Scores so far: {totals}."]

    def public_data(self, state, agent):
        return {"round": state.round, "history": list(state.g.history), "scores": dict(state.scores)}


GAME = LowestUniqueBid
