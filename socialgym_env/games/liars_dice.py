"""Liar's Dice — 3 players, 5 dice each (faces 1–6, no wild ones). Bluffing, winner takes all.

Create: ``socialgym_env.make("liars_dice", dice=5)`` (``num_players`` 2–6, default 3).

Each round every player with dice rolls them; each player is told its own dice privately
*before* the first bid of the round. Players then bid in seat order, starting with the opener.

| Phase | Who                   | Actions                                                         |
|-------|-----------------------|-----------------------------------------------------------------|
| roll  | (automatic)           | all dice in play are rolled; each player privately sees its own  |
| bid   | the player to move    | ``bid Q F`` — "at least Q dice show face F" (Q from 1 to the dice |
|       |                       | in play, F 1–6); must raise: higher Q, or same Q and higher F    |
|       |                       | ``liar`` — challenge the last bid (not on a round's first move) |

Challenge (``liar``): count face F over all dice in play (no wild ones). If the count ≥ Q the
caller loses a die, otherwise the bidder does. Only the count is announced, never anyone's
dice. The loser of the die opens the next round (the next live player in seat order if it
is out). Within a round the turn always passes to the next live player, so nobody bids twice
in a row; a caller who loses its die opens the next round with fresh dice. Round 1 is opened
by seat 0. A player with no dice is out; the last player with dice wins.

Observation: the public board (round starts, bids, challenge results), the seat's own dice
under "Your private information", the dice count of every player and the current bid.
``infos[agent]["game_state"]`` (``public_data``): ``my_dice``, ``dice_counts``,
``dice_in_play``, ``bid`` ([Q, F] or None), ``bidder``, ``round_bids``, ``opener``.

Rewards (winner-take-all): the winner +1, everyone else −1. Cap 200 steps (a truncation): the
player(s) with most dice win (+1), the rest lose (−1).
Invalid action fallback: ``liar`` when there is a bid to challenge, otherwise a random legal
opening bid (env RNG).

Version history: v0 initial.
"""
from __future__ import annotations

from ..actions import ActionSpec, Int, cached_spec
from ..game import Game, GameInfo, Phase, WINNER_TAKE_ALL
from ..state import State

FACES = 6


# ------------------------------------------------------------------ pure rules
def bid_raises(new: tuple[int, int], old: tuple[int, int] | None) -> bool:
    """A bid raises the standing one with a higher quantity, or the same quantity and a higher face."""
    if old is None:
        return True
    return new[0] > old[0] or (new[0] == old[0] and new[1] > old[1])


def count_face(dice: dict, face: int) -> int:
    """How many dice in play (``{agent: [faces]}``) show ``face``."""
    return sum(row.count(face) for row in dice.values())


def challenge_loser(dice: dict, bid: tuple[int, int], bidder: str, caller: str) -> str:
    """The player who loses a die when ``caller`` calls liar on ``bidder``'s ``bid``."""
    quantity, face = bid
    return caller if count_face(dice, face) >= quantity else bidder


def _bid_spec(in_play: int, standing: tuple[int, int] | None) -> ActionSpec:
    """``bid Q F``: Q of the ``in_play`` dice, raising ``standing`` (None: the opening bid)."""
    def check(values):
        if not bid_raises(tuple(values), standing):
            return (f"a bid must raise {standing[0]} x {standing[1]}: a higher quantity, "
                    f"or the same quantity and a higher face")
        return None

    return ActionSpec("bid", (Int(1, in_play, name="Q"), Int(1, FACES, name="F")),
                      help="claim that at least Q of all dice in play show face F", check=check)


def _dice_text(row) -> str:
    return " ".join(str(d) for d in row)


class LiarsDice(Game):
    info = GameInfo(
        id="liars_dice", name="Liar's Dice", category="bluffing", num_players=3,
        information="hidden_state", communication="structured", horizon="open_ended",
        iteration="until one player has dice", skills=("deception", "probabilistic"),
        outcome=WINNER_TAKE_ALL, max_steps=200,
        description=("Liar's Dice. Every player has a cup of dice (faces 1-6, no wild ones) and sees "
                     "only its own. In turn, each player either bids 'bid Q F' - a claim that at least "
                     "Q of ALL dice in play show face F - raising the last bid (higher Q, or the same Q "
                     "and a higher F), or calls 'liar' on the last bid. On a call the dice showing F "
                     "are counted: if there are at least Q the caller loses a die, otherwise the "
                     "bidder does. The loser opens the next round. A player without dice is out; the "
                     "last player with dice wins."))
    config_defaults = {"dice": 5}
    player_counts = (2, 3, 4, 5, 6)

    config_ranges = {"dice": (1, 20)}

    # ------------------------------------------------------------------ flow
    def phases(self):
        return [
            Phase("roll", actors=lambda s: [], grammar=lambda s, a: [ActionSpec("pass")],
                  resolve=self._roll),
            Phase("bid", actors=lambda s: [s.g.turn], grammar=self._specs, resolve=self._resolve,
                  fallback=self._fallback, instructions=self._instructions),
        ]

    def setup(self, state: State) -> None:
        g = state.g
        g.counts = {a: self.config["dice"] for a in state.agents}
        g.dice = {}
        g.opener = state.agents[0]
        g.turn = g.opener
        g.bid = None
        g.bidder = None
        g.round_bids = []
        g.challenges = []
        state.announce(f"Each player has {self.config['dice']} dice. {state.name(g.opener)} opens round 1.")
        state.goto("roll")

    def _roll(self, state: State, actions: dict) -> None:
        g = state.g
        state.round += 1
        live = [a for a in state.agents if g.counts[a] > 0]
        g.dice = {a: sorted(state.rng.randint(1, FACES) for _ in range(g.counts[a])) for a in live}
        g.bid, g.bidder, g.round_bids = None, None, []
        g.turn = g.opener
        counts = ", ".join(f"{state.name(a)} {g.counts[a]}" for a in live)
        state.announce(f"Round {state.round}: dice are rolled ({counts}; {self.dice_in_play(state)} in play). "
                       f"{state.name(g.opener)} opens.")
        for a in live:
            state.tell(a, f"Round {state.round}: your dice are {_dice_text(g.dice[a])}.")
        state.goto("bid")

    def dice_in_play(self, state: State) -> int:
        return sum(len(row) for row in state.g.dice.values())

    def _specs(self, state: State, agent: str):
        g = state.g
        standing = tuple(g.bid) if g.bid else None
        in_play = self.dice_in_play(state)
        # the bid spec depends on the dice in play and the standing bid alone: built (and its
        # legal bids, up to 6 per die in play, enumerated) once per pair, not at every decision
        specs = [cached_spec(("liars_dice", "bid", in_play, standing), lambda: _bid_spec(in_play, standing))]
        if standing is not None:
            specs.append(ActionSpec("liar", help=f"challenge {state.name(g.bidder)}'s bid of "
                                                 f"{standing[0]} x {standing[1]}"))
        return specs

    def _fallback(self, state: State, agent: str):
        return "liar" if state.g.bid else "random"

    def _instructions(self, state: State, agent: str) -> str:
        g = state.g
        if g.bid is None:
            return f"Round {state.round}: you open the bidding ({self.dice_in_play(state)} dice in play)."
        return (f"Round {state.round}: the bid is {g.bid[0]} x {g.bid[1]} by {state.name(g.bidder)} "
                f"({self.dice_in_play(state)} dice in play). Raise it or call liar.")

    def _resolve(self, state: State, actions: dict) -> None:
        g = state.g
        (agent, action), = actions.items()
        if action.type == "bid":
            g.bid, g.bidder = tuple(action.values), agent
            g.round_bids.append([agent, list(action.values)])
            state.announce(f"{state.name(agent)} bids {action.values[0]} x {action.values[1]}.")
            g.turn = state.next_alive(agent)
            state.goto("bid")
            return
        self._challenge(state, agent)

    def _challenge(self, state: State, caller: str) -> None:
        g = state.g
        quantity, face = g.bid
        bidder = g.bidder
        count = count_face(g.dice, face)
        loser = challenge_loser(g.dice, g.bid, bidder, caller)
        g.counts[loser] -= 1
        g.challenges.append({"round": state.round, "caller": caller, "bidder": bidder, "bid": [quantity, face],
                             "count": count, "loser": loser})
        verdict = "the bid stands" if loser == caller else "the bid was false"
        state.announce(f"{state.name(caller)} calls liar on {state.name(bidder)}'s bid of {quantity} x {face}. "
                       f"There are {count} dice showing {face}: {verdict}, {state.name(loser)} loses a die "
                       f"({g.counts[loser]} left).")
        if g.counts[loser] == 0:
            state.eliminate(loser)
            state.announce(f"{state.name(loser)} has no dice left and is out.")
        live = [a for a in state.agents if g.counts[a] > 0]
        if len(live) == 1:
            state.finish(f"{state.name(live[0])} is the last player with dice", winners=live)
            return
        g.opener = loser if g.counts[loser] > 0 else state.next_alive(loser)
        state.goto("roll")

    def on_truncation(self, state: State) -> None:
        counts = state.g.counts
        top = max(counts.values())
        winners = [a for a in state.agents if counts[a] == top]
        state.finish(f"turn cap reached: most dice ({top}) wins - {state.names(winners)}",
                     winners=winners, truncated=True)

    # ------------------------------------------------------------------ text hooks
    def goal(self, state, agent):
        return "Be the last player with dice."

    def secret(self, state, agent):
        row = state.g.dice.get(agent)
        if not row:
            return []
        return [f"Your dice (round {state.round}): {_dice_text(row)}."]

    def status(self, state, agent):
        g = state.g
        lines = [f"Round {state.round}. Dice per player: "
                 + ", ".join(f"{state.name(a)} {g.counts[a]}" for a in state.agents)
                 + f" ({self.dice_in_play(state)} in play)."]
        if g.bid:
            lines.append(f"Current bid: {g.bid[0]} x {g.bid[1]} by {state.name(g.bidder)}.")
        else:
            lines.append("No bid yet this round.")
        return lines

    def public_data(self, state, agent):
        g = state.g
        return {"my_dice": list(g.dice.get(agent, [])), "dice_counts": dict(g.counts),
                "dice_in_play": self.dice_in_play(state), "bid": list(g.bid) if g.bid else None,
                "bidder": g.bidder, "round_bids": [list(b) for b in g.round_bids], "opener": g.opener,
                "faces": FACES}

    def metrics(self, state):
        challenges = state.g.challenges
        return {"challenges": len(challenges),
                "successful_calls": sum(1 for c in challenges if c["loser"] != c["caller"])}


GAME = LiarsDice
