"""Skull — 4 players, each with 3 flowers and 1 skull. Bluffing, winner takes all.

Create: ``socialgym_env.make("skull")`` (``num_players`` 3–6, default 4).

A round: placement, then bidding, then the highest bidder's attempt. Round 1 is started by
seat 0; later rounds by the last bidder (the next live player in seat order if it is out).

| Phase    | Who                     | Actions                                                        |
|----------|-------------------------|----------------------------------------------------------------|
| place    | the player to move      | ``place flower`` / ``place skull`` (a disc from its hand, face  |
|          |                         | down on its stack); once every live player has placed a disc:  |
|          |                         | ``bid N`` (1 ≤ N ≤ discs on the table). Empty hand: must bid.  |
| bidding  | next bidder still in    | ``bid N`` (N above the current bid, ≤ discs on the table) or   |
|          |                         | ``pass``. Passed players are skipped, not stepped.             |
| flip     | the highest bidder      | ``flip NAME`` — turn the top face-down disc of NAME's stack    |

Bidding ends when one bidder is left (everyone else passed) or when a bid equals the number
of discs on the table. The bidder then flips N discs: first all of its own stack, top to
bottom, automatically; then ``flip NAME`` one top disc at a time from other stacks that still
have face-down discs. A skull ends the attempt: the bidder loses one disc at random from its
collection (the lost disc's kind is told to the bidder only; with no discs left it is out);
all discs go back to their owners' hands. N flowers: the bidder wins the game (one successful
attempt wins). The last player with discs also wins.

Observation: the public board (placements without their kind, bids, passes, every flipped
disc), and under "Your private information" the seat's own hand and stack.
``infos[agent]["game_state"]``: ``my_hand``, ``my_stack`` (bottom to top), ``stack_sizes``,
``face_down`` (unflipped discs per stack), ``hand_sizes``, ``disc_counts``, ``on_table``,
``bid``, ``bidder``, ``passed``, ``flowers_needed``, ``can_bid``.

Rewards (winner-take-all): the winner +1, everyone else −1. Cap 200 steps: a draw for all (0).
Invalid action fallbacks: placement and bidding — a random legal action (env RNG); flip —
a random stack that still has face-down discs (an empty or unknown target is an invalid
action with its reason and never stalls the game).

Version history: v0 initial.
"""
from __future__ import annotations

from ..actions import ActionSpec, Choice, Int
from ..game import Game, GameInfo, Phase, WINNER_TAKE_ALL
from ..patterns import player_arg
from ..state import State

FLOWER, SKULL = "flower", "skull"
START_HAND = {FLOWER: 3, SKULL: 1}


# ------------------------------------------------------------------ pure rules
def collection(hand: dict) -> list[str]:
    """A hand as a sorted list of discs (flowers first)."""
    return [FLOWER] * hand[FLOWER] + [SKULL] * hand[SKULL]


def discs_on_table(stacks: dict) -> int:
    return sum(len(s) for s in stacks.values())


def may_bid(state: State) -> bool:
    """Bidding may open once every live player has placed at least one disc this round."""
    return all(state.g.stacks[a] for a in state.alive())


class Skull(Game):
    info = GameInfo(
        id="skull", name="Skull", category="bluffing", num_players=4,
        information="hidden_state", communication="none", horizon="open_ended",
        iteration="until one successful attempt", skills=("deception", "tom"),
        outcome=WINNER_TAKE_ALL, max_steps=200,
        description=("Skull. Each player owns discs: 3 flowers and 1 skull. In turn, players place a "
                     "disc face down on their own stack (everyone places at least one). Then, on its "
                     "turn, a player may instead open bidding: 'bid N' claims it can turn N discs "
                     "without hitting a skull. Others in turn raise or pass (passed players are out "
                     "of the bidding). The last bidder turns all of its own stack first, then one top "
                     "disc at a time from other stacks ('flip NAME'). N flowers wins the game. A skull "
                     "costs the bidder one of its discs at random; a player with no discs is out, and "
                     "the last player with discs wins."))
    config_defaults = {}
    player_counts = (3, 4, 5, 6)

    def phases(self):
        return [
            Phase("place", actors=lambda s: [s.g.turn], grammar=self._place_specs, resolve=self._placed,
                  instructions=self._place_instructions),
            Phase("bidding", actors=lambda s: [s.g.turn], grammar=self._bid_specs, resolve=self._bid,
                  instructions=self._bid_instructions),
            Phase("flip", actors=lambda s: [s.g.bidder], grammar=self._flip_specs, resolve=self._flipped,
                  fallback=self._flip_fallback, instructions=self._flip_instructions),
        ]

    # ------------------------------------------------------------------ setup / rounds
    def setup(self, state: State) -> None:
        g = state.g
        g.hands = {a: dict(START_HAND) for a in state.agents}
        g.stacks = {a: [] for a in state.agents}
        g.face_down = {a: 0 for a in state.agents}
        g.bid, g.bidder, g.passed, g.flowers = 0, None, [], 0
        g.attempts = []
        self._start_round(state, state.agents[0])

    def _start_round(self, state: State, starter: str) -> None:
        g = state.g
        for a in state.agents:
            for disc in g.stacks[a]:
                g.hands[a][disc] += 1
            g.stacks[a] = []
            g.face_down[a] = 0
        g.bid, g.bidder, g.passed, g.flowers = 0, None, [], 0
        g.starter = g.turn = starter
        state.round += 1
        counts = ", ".join(f"{state.name(a)} {self.disc_count(state, a)}" for a in state.alive())
        state.announce(f"Round {state.round}: discs per player: {counts}. {state.name(starter)} places first.")
        state.goto("place")

    def disc_count(self, state: State, agent: str) -> int:
        g = state.g
        return sum(g.hands[agent].values()) + len(g.stacks[agent])

    # ------------------------------------------------------------------ placement
    def _place_specs(self, state: State, agent: str):
        g = state.g
        kinds = tuple(k for k in (FLOWER, SKULL) if g.hands[agent][k] > 0)
        specs = []
        if kinds:
            specs.append(ActionSpec("place", (Choice(kinds, name="DISC"),), help="put a disc from your hand on your stack"))
        if may_bid(state) or not kinds:
            specs.append(ActionSpec("bid", (Int(1, discs_on_table(g.stacks)),),
                                    help="open bidding: you claim to turn N discs without a skull"))
        return specs

    def _place_instructions(self, state, agent):
        g = state.g
        if not any(g.hands[agent].values()):
            return "Your hand is empty: you must open bidding."
        if not may_bid(state):
            return "Placement: put a disc face down on your stack (everyone places one before any bid)."
        return f"Place another disc or open bidding ({discs_on_table(g.stacks)} discs on the table)."

    def _placed(self, state: State, actions: dict) -> None:
        g = state.g
        (agent, action), = actions.items()
        if action.type == "place":
            g.hands[agent][action.arg] -= 1
            g.stacks[agent].append(action.arg)
            g.face_down[agent] += 1
            state.announce(f"{state.name(agent)} places a disc (stack of {len(g.stacks[agent])}).")
            g.turn = state.next_alive(agent)
            state.goto("place")
            return
        g.passed = []
        self._raise(state, agent, action.arg, opening=True)

    # ------------------------------------------------------------------ bidding
    def _bid_specs(self, state: State, agent: str):
        g = state.g
        total = discs_on_table(g.stacks)
        return [ActionSpec("bid", (Int(g.bid + 1, total),), help=f"raise the bid (now {g.bid} by {state.name(g.bidder)})"),
                ActionSpec("pass", help="leave the bidding for this round")]

    def _bid_instructions(self, state, agent):
        g = state.g
        return (f"Bidding: {state.name(g.bidder)} bids {g.bid} of {discs_on_table(g.stacks)} discs on the table. "
                f"Raise or pass.")

    def _bid(self, state: State, actions: dict) -> None:
        g = state.g
        (agent, action), = actions.items()
        if action.type == "bid":
            self._raise(state, agent, action.arg)
            return
        g.passed.append(agent)
        state.announce(f"{state.name(agent)} passes.")
        self._next_bidder(state, agent)

    def _raise(self, state: State, agent: str, n: int, opening: bool = False) -> None:
        g = state.g
        g.bid, g.bidder = n, agent
        state.announce(f"{state.name(agent)} {'opens bidding with' if opening else 'bids'} {n}.")
        if n == discs_on_table(g.stacks):
            state.announce(f"{state.name(agent)} bid every disc on the table: bidding ends.")
            self._start_attempt(state)
            return
        self._next_bidder(state, agent)

    def _next_bidder(self, state: State, agent: str) -> None:
        g = state.g
        still_in = [a for a in state.alive() if a not in g.passed]
        following = state.next_alive(agent, candidates=still_in)
        if following == g.bidder:
            self._start_attempt(state)
            return
        g.turn = following
        state.goto("bidding")

    # ------------------------------------------------------------------ the attempt
    def _start_attempt(self, state: State) -> None:
        g = state.g
        bidder = g.bidder
        state.announce(f"{state.name(bidder)} must turn {g.bid} discs, starting with its own stack.")
        while g.face_down[bidder] > 0 and g.flowers < g.bid:
            if self._turn_disc(state, bidder):
                return
        state.goto("flip")

    def _turn_disc(self, state: State, owner: str) -> bool:
        """Turn the top face-down disc of ``owner``'s stack; True when the attempt is over."""
        g = state.g
        bidder = g.bidder
        g.face_down[owner] -= 1
        disc = g.stacks[owner][g.face_down[owner]]
        whose = "its own" if owner == bidder else f"{state.name(owner)}'s"
        if disc == SKULL:
            state.announce(f"{state.name(bidder)} turns {whose} disc: a SKULL.")
            self._fail(state, owner)
            return True
        g.flowers += 1
        state.announce(f"{state.name(bidder)} turns {whose} disc: a flower ({g.flowers} of {g.bid}).")
        if g.flowers >= g.bid:
            g.attempts.append({"round": state.round, "bidder": bidder, "bid": g.bid, "success": True})
            state.finish(f"{state.name(bidder)} turned {g.bid} flowers and wins", winners=[bidder])
            return True
        return False

    def _flip_specs(self, state: State, agent: str):
        g = state.g
        candidates = [a for a in state.alive() if a != agent]

        def check(values):
            target = values[0]
            if g.face_down[target] == 0:
                return f"{state.name(target)}'s stack has no face-down discs left"
            return None

        return [ActionSpec("flip", (player_arg(state, candidates),), check=check,
                           help="turn the top face-down disc of that player's stack")]

    def _flip_fallback(self, state: State, agent: str) -> str:
        g = state.g
        targets = [a for a in state.alive() if a != agent and g.face_down[a] > 0]
        return f"flip {state.rng.choice(targets)}"

    def _flip_instructions(self, state, agent):
        g = state.g
        left = ", ".join(f"{state.name(a)} {g.face_down[a]}" for a in state.alive() if a != agent and g.face_down[a])
        return f"You have turned {g.flowers} of {g.bid} flowers. Face-down discs left: {left}."

    def _flipped(self, state: State, actions: dict) -> None:
        (agent, action), = actions.items()
        if not self._turn_disc(state, action.arg):
            state.goto("flip")

    def _fail(self, state: State, skull_owner: str) -> None:
        g = state.g
        bidder = g.bidder
        g.attempts.append({"round": state.round, "bidder": bidder, "bid": g.bid, "success": False,
                           "skull_owner": skull_owner})
        for a in state.agents:   # all discs go back to hands
            for disc in g.stacks[a]:
                g.hands[a][disc] += 1
            g.stacks[a] = []
            g.face_down[a] = 0
        lost = state.rng.choice(collection(g.hands[bidder]))
        g.hands[bidder][lost] -= 1
        left = self.disc_count(state, bidder)
        state.announce(f"{state.name(bidder)} loses a disc at random ({left} left).")
        state.tell(bidder, f"You lost a {lost}.")
        if left == 0:
            state.eliminate(bidder)
            state.announce(f"{state.name(bidder)} has no discs left and is out.")
        live = state.alive()
        if len(live) == 1:
            state.finish(f"{state.name(live[0])} is the last player with discs", winners=live)
            return
        starter = bidder if left > 0 else state.next_alive(bidder)
        self._start_round(state, starter)

    # ------------------------------------------------------------------ text hooks
    def goal(self, state, agent):
        return "Win one bid by turning that many flowers, or be the last player with discs."

    def secret(self, state, agent):
        g = state.g
        hand = g.hands[agent]
        stack = ", ".join(g.stacks[agent]) or "empty"
        return [f"Your hand: {hand[FLOWER]} flower(s), {hand[SKULL]} skull(s).",
                f"Your stack (bottom to top): {stack}."]

    def status(self, state, agent):
        g = state.g
        lines = [f"Round {state.round}. Stacks: " + ", ".join(
            f"{state.name(a)} {g.face_down[a]} face down of {len(g.stacks[a])}" for a in state.alive())
            + f"; {discs_on_table(g.stacks)} discs on the table.",
            "Discs owned: " + ", ".join(f"{state.name(a)} {self.disc_count(state, a)}" for a in state.agents) + "."]
        if g.bidder:
            lines.append(f"Highest bid: {g.bid} by {state.name(g.bidder)}"
                         + (f"; passed: {state.names(g.passed)}." if g.passed else "."))
        return lines

    def public_data(self, state, agent):
        g = state.g
        return {"my_hand": dict(g.hands[agent]), "my_stack": list(g.stacks[agent]),
                "stack_sizes": {a: len(g.stacks[a]) for a in state.agents},
                "face_down": dict(g.face_down),
                "hand_sizes": {a: sum(g.hands[a].values()) for a in state.agents},
                "disc_counts": {a: self.disc_count(state, a) for a in state.agents},
                "on_table": discs_on_table(g.stacks), "bid": g.bid, "bidder": g.bidder,
                "passed": list(g.passed), "flowers_turned": g.flowers, "can_bid": may_bid(state),
                "starter": g.starter}

    def metrics(self, state):
        attempts = state.g.attempts
        return {"attempts": len(attempts), "successful_attempts": sum(1 for a in attempts if a["success"])}


GAME = Skull
