"""Coup — 4 players, a 15-card court deck, 2 face-down cards and 2 coins each. Bluffing,
winner takes all.

Create: ``socialgym_env.make("coup")`` (``num_players`` 2–6, default 4).

The court deck holds 3 each of Duke, Assassin, Captain, Ambassador, Contessa. Each card a
player holds face down is one *influence*; a player with none left is out. Seat 0 moves first,
then turns pass to the next live player in seat order.

| Action              | Cost | Claim      | Effect                                   | Challenge | Block (by whom, claiming)          |
|---------------------|------|------------|------------------------------------------|-----------|------------------------------------|
| ``income``          | –    | –          | +1 coin                                  | no        | no                                 |
| ``foreign_aid``     | –    | –          | +2 coins                                 | no        | anyone, claiming Duke              |
| ``tax``             | –    | Duke       | +3 coins                                 | yes       | no                                 |
| ``steal NAME``      | –    | Captain    | take up to 2 coins from NAME             | yes       | NAME, ``block Captain/Ambassador`` |
| ``assassinate NAME``| 3    | Assassin   | NAME loses an influence                  | yes       | NAME, claiming Contessa            |
| ``exchange``        | –    | Ambassador | draw 2, then privately ``keep C1 C2``    | yes       | no                                 |
| ``coup NAME``       | 7    | –          | NAME loses an influence                  | no        | no                                 |

With 10 or more coins ``coup`` is the only legal action.

| Phase    | Who                                  | Actions                                        |
|----------|--------------------------------------|------------------------------------------------|
| turn     | the player to move                   | one of the actions above                       |
| respond  | every other live player, simultaneous| ``challenge`` (character claims only), ``block``/``block CARD`` (where the responder may block), ``pass`` |
| lose     | a player losing an influence         | ``reveal CARD`` (private choice of one of its face-down cards; automatic with one card left) |
| exchange | the exchanging player                | ``keep C1 C2`` — exactly as many cards as its influence, from hand + the 2 drawn |

Responses: a challenge beats a block; among several challengers (or blockers) the first in
turn order after the actor counts. Blocks are not challengeable (the paper's simplification)
and resolve automatically: the action fails. Challenge: a claimant holding the claimed card
reveals it, shuffles it into the deck and draws a replacement (told to it privately); the
challenger loses an influence and the action goes ahead. Otherwise the claimant loses an
influence and the action fails. Coins paid for an assassination are spent when it is blocked
and refunded when it fails to a successful challenge (published rules). If the target of a steal or an assassination is already
out when the action takes effect (it lost its last influence by a failed challenge of that
very action), the action has no further effect. A revealed (lost) card is public; face-down
cards never appear in anyone else's view.

Observation: the board (actions, claims, responses, challenge results, revealed cards), the
seat's own face-down cards under "Your private information", and everyone's coins and
influence. ``infos[agent]["game_state"]``: ``my_cards``, ``coins``, ``influence``,
``revealed``, ``deck_size``, ``pending`` (the action being answered), ``claims`` (history),
``exchange_options`` (own, during an exchange).

Rewards (winner-take-all): the last player with influence +1, everyone else −1. Cap 300
steps: most influence, then most coins, wins (ties: all tied leaders win); the rest −1.
Invalid action fallbacks: turn — ``income`` (``coup`` on a random target when forced);
respond — ``pass``; lose — a random face-down card; exchange — a random legal keep.

Version history: v0 initial.
"""
from __future__ import annotations

from collections import Counter

from ..actions import ActionSpec, Choice
from ..game import Game, GameInfo, Phase, WINNER_TAKE_ALL
from ..patterns import player_arg
from ..state import State

CARDS = ("Duke", "Assassin", "Captain", "Ambassador", "Contessa")
COPIES = 3
START_COINS = 2
ASSASSINATE_COST = 3
COUP_COST = 7
FORCED_COUP = 10
# action -> the character it claims (only these can be challenged)
CLAIMS = {"tax": "Duke", "steal": "Captain", "assassinate": "Assassin", "exchange": "Ambassador"}
# action -> the characters a blocker claims
BLOCKS = {"foreign_aid": ("Duke",), "steal": ("Captain", "Ambassador"), "assassinate": ("Contessa",)}
TARGETED = ("steal", "assassinate", "coup")


# ------------------------------------------------------------------ pure rules
def can_challenge(action: str) -> bool:
    return action in CLAIMS


def may_block(action: str, actor: str, target, responder: str) -> bool:
    """Foreign aid: anyone but the actor; steal and assassinate: only the target."""
    if action not in BLOCKS or responder == actor:
        return False
    return action == "foreign_aid" or responder == target


def first_after(order: list[str], candidates: list[str]) -> str | None:
    """The first of ``candidates`` in ``order`` (turn order after the actor)."""
    for agent in order:
        if agent in candidates:
            return agent
    return None


def fits(kept, available) -> bool:
    """Whether the multiset ``kept`` can be taken from ``available``."""
    need, have = Counter(kept), Counter(available)
    return all(have[c] >= n for c, n in need.items())


class Coup(Game):
    info = GameInfo(
        id="coup", name="Coup", category="bluffing", num_players=4,
        information="hidden_state", communication="structured", horizon="open_ended",
        iteration="until one player has influence", skills=("deception", "tom"),
        outcome=WINNER_TAKE_ALL, max_steps=300,
        description=("Coup. Each player has 2 face-down character cards (its influence) and coins. "
                     "On your turn take one action: income (+1), foreign_aid (+2; anyone may block "
                     "claiming Duke), tax (claim Duke, +3), steal NAME (claim Captain, take up to 2 "
                     "coins; the target may block claiming Captain or Ambassador), assassinate NAME "
                     "(pay 3, claim Assassin; the target may block claiming Contessa), exchange (claim "
                     "Ambassador: draw 2 cards, keep as many as your influence), coup NAME (pay 7, "
                     "unblockable; forced with 10+ coins). You may claim cards you do not hold. The "
                     "others may challenge a claim: a liar loses an influence and the action fails; "
                     "if the claim was true the challenger loses an influence. The deck has 3 of each "
                     "of Duke, Assassin, Captain, Ambassador, Contessa. Last player with influence wins."))
    config_defaults = {}
    player_counts = (2, 3, 4, 5, 6)

    def phases(self):
        return [
            Phase("turn", actors=lambda s: [s.g.turn], grammar=self._turn_specs, resolve=self._declared,
                  fallback=self._turn_fallback, instructions=self._turn_instructions),
            Phase("respond", actors=self._responders, grammar=self._respond_specs, resolve=self._responded,
                  simultaneous=True, fallback="pass", instructions=self._respond_instructions),
            Phase("lose", actors=lambda s: [s.g.loser], grammar=self._lose_specs, resolve=self._lost,
                  instructions=lambda s, a: "You lose an influence: choose which face-down card to reveal."),
            Phase("exchange", actors=lambda s: [s.g.pending["actor"]], grammar=self._keep_specs,
                  resolve=self._kept, instructions=self._keep_instructions),
        ]

    # ------------------------------------------------------------------ setup
    def setup(self, state: State) -> None:
        g = state.g
        g.deck = [card for card in CARDS for _ in range(COPIES)]
        state.rng.shuffle(g.deck)
        g.hands = {a: [g.deck.pop(), g.deck.pop()] for a in state.agents}
        g.revealed = {a: [] for a in state.agents}
        g.coins = {a: START_COINS for a in state.agents}
        g.turn = state.agents[0]
        g.pending = None
        g.queue = []
        g.loser = None
        g.options = []
        g.claims = []
        g.challenges = []
        state.round = 1
        state.announce(f"Each player has 2 face-down cards and {START_COINS} coins. "
                       f"{state.name(g.turn)} moves first.")
        for a in state.agents:
            state.tell(a, f"Your cards: {', '.join(g.hands[a])}.")
        state.goto("turn")

    # ------------------------------------------------------------------ turn
    def _turn_specs(self, state: State, agent: str):
        g = state.g
        targets = player_arg(state, state.others(agent))
        coup = ActionSpec("coup", (targets,), help=f"pay {COUP_COST}: the target loses an influence; cannot be blocked")
        if g.coins[agent] >= FORCED_COUP:
            return [coup]
        specs = [ActionSpec("income", help="+1 coin"),
                 ActionSpec("foreign_aid", help="+2 coins; anyone may block claiming Duke"),
                 ActionSpec("tax", help="claim Duke: +3 coins"),
                 ActionSpec("steal", (targets,), help="claim Captain: take up to 2 coins from the target"),
                 ActionSpec("exchange", help="claim Ambassador: draw 2 cards, then keep as many as your influence")]
        if g.coins[agent] >= ASSASSINATE_COST:
            specs.append(ActionSpec("assassinate", (targets,),
                                    help=f"pay {ASSASSINATE_COST}, claim Assassin: the target loses an influence"))
        if g.coins[agent] >= COUP_COST:
            specs.append(coup)
        return specs

    def _turn_fallback(self, state: State, agent: str) -> str:
        if state.g.coins[agent] >= FORCED_COUP:
            return f"coup {state.rng.choice(state.others(agent))}"
        return "income"

    def _turn_instructions(self, state, agent):
        coins = state.g.coins[agent]
        if coins >= FORCED_COUP:
            return f"You have {coins} coins: you must coup."
        return f"Your turn ({coins} coins). Choose an action; you may claim any character."

    def _declared(self, state: State, actions: dict) -> None:
        g = state.g
        (actor, action), = actions.items()
        kind, target = action.type, action.arg
        g.pending = {"type": kind, "actor": actor, "target": target, "claim": CLAIMS.get(kind)}
        g.queue = []
        name = state.name(actor)
        if kind == "income":
            g.coins[actor] += 1
            state.announce(f"{name} takes income (+1, now {g.coins[actor]} coins).")
            self._continue(state)
            return
        if kind == "coup":
            g.coins[actor] -= COUP_COST
            state.announce(f"{name} pays {COUP_COST} coins to coup {state.name(target)}.")
            g.queue = [("lose", target, "couped")]
            self._continue(state)
            return
        if kind == "assassinate":
            g.coins[actor] -= ASSASSINATE_COST
        g.claims.append({"actor": actor, "action": kind, "claim": CLAIMS.get(kind), "target": target})
        text = {"foreign_aid": f"{name} takes foreign aid (+2).",
                "tax": f"{name} claims Duke to take tax (+3).",
                "steal": f"{name} claims Captain to steal from {state.name(target or actor)}.",
                "assassinate": f"{name} pays {ASSASSINATE_COST} coins and claims Assassin to assassinate "
                               f"{state.name(target or actor)}.",
                "exchange": f"{name} claims Ambassador to exchange cards."}[kind]
        state.announce(text)
        state.goto("respond")

    # ------------------------------------------------------------------ respond
    def _turn_order_after(self, state: State, actor: str) -> list[str]:
        order, current = [], actor
        for _ in range(len(state.agents) - 1):
            current = state.next_alive(current)
            if current == actor:
                break
            order.append(current)
        return order

    def _responders(self, state: State) -> list[str]:
        return self._turn_order_after(state, state.g.pending["actor"])

    def _respond_specs(self, state: State, agent: str):
        p = state.g.pending
        specs = []
        if can_challenge(p["type"]):
            specs.append(ActionSpec("challenge", help=f"say {state.name(p['actor'])} does not hold {p['claim']}"))
        if may_block(p["type"], p["actor"], p["target"], agent):
            cards = BLOCKS[p["type"]]
            if len(cards) == 1:
                specs.append(ActionSpec("block", help=f"claim {cards[0]} to block the action"))
            else:
                specs.append(ActionSpec("block", (Choice(cards, name="CARD"),),
                                        help="claim that card to block the action"))
        specs.append(ActionSpec("pass", help="let the action happen"))
        return specs

    def _respond_instructions(self, state, agent):
        p = state.g.pending
        what = p["type"].replace("_", " ") + (f" {state.name(p['target'])}" if p["target"] else "")
        return f"{state.name(p['actor'])} is doing: {what}. Challenge, block (if you may) or pass."

    def _responded(self, state: State, actions: dict) -> None:
        g = state.g
        p = g.pending
        actor = p["actor"]
        order = self._turn_order_after(state, actor)
        responses = []
        for a in order:
            act = actions.get(a)
            if act is None:
                continue
            word = {"challenge": "challenges", "pass": "passes"}.get(act.type, "blocks")
            responses.append(f"{state.name(a)} {word}")
        state.announce("Responses: " + ", ".join(responses) + ".")
        challenger = first_after(order, [a for a in order if a in actions and actions[a].type == "challenge"])
        blocker = first_after(order, [a for a in order if a in actions and actions[a].type == "block"])
        if challenger is not None:
            self._challenge(state, actor, challenger)
        elif blocker is not None:
            card = actions[blocker].arg or BLOCKS[p["type"]][0]
            state.announce(f"{state.name(blocker)} blocks claiming {card}: the {p['type'].replace('_', ' ')} fails.")
            g.claims.append({"actor": blocker, "action": "block", "claim": card, "target": actor})
            self._continue(state)
        else:
            g.queue = [("effect",)]
            self._continue(state)

    def _challenge(self, state: State, claimant: str, challenger: str) -> None:
        g = state.g
        card = g.pending["claim"]
        honest = card in g.hands[claimant]
        g.challenges.append({"claimant": claimant, "challenger": challenger, "card": card, "honest": honest})
        if honest:
            g.hands[claimant].remove(card)
            g.deck.append(card)
            state.rng.shuffle(g.deck)
            drawn = g.deck.pop()
            g.hands[claimant].append(drawn)
            state.announce(f"{state.name(challenger)} challenges {state.name(claimant)}'s claim of {card}. "
                           f"{state.name(claimant)} reveals a {card}, shuffles it into the deck and draws a "
                           f"replacement; {state.name(challenger)} loses an influence.")
            state.tell(claimant, f"You shuffled your {card} into the deck and drew a {drawn}.")
            g.queue = [("lose", challenger, "lost a challenge"), ("effect",)]
        else:
            state.announce(f"{state.name(challenger)} challenges {state.name(claimant)}'s claim of {card}. "
                           f"{state.name(claimant)} does not have a {card}: {state.name(claimant)} loses an "
                           f"influence and the {g.pending['type'].replace('_', ' ')} fails.")
            g.queue = [("lose", claimant, "caught bluffing")]
            if g.pending["type"] == "assassinate":
                g.coins[claimant] += ASSASSINATE_COST
                state.announce(f"{state.name(claimant)} gets the {ASSASSINATE_COST} coins back.")
        self._continue(state)

    # ------------------------------------------------------------------ the queue of consequences
    def _continue(self, state: State) -> None:
        """Run the pending consequences (influence losses, the action's effect) in order; stop at
        the first one that needs a decision. When none is left, the next player moves."""
        g = state.g
        while g.queue:
            if len(state.alive()) <= 1:
                break
            step = g.queue.pop(0)
            if step[0] == "lose":
                who, reason = step[1], step[2]
                if not state.seat[who].alive:
                    continue
                if len(g.hands[who]) == 1:
                    self.lose_influence(state, who, g.hands[who][0], reason)
                    continue
                g.loser, g.loss_reason = who, reason
                state.goto("lose")
                return
            if self._apply_effect(state):
                return
        live = state.alive()
        if len(live) == 1:
            state.finish(f"{state.name(live[0])} is the last player with influence", winners=live)
            return
        g.pending = None
        g.turn = state.next_alive(g.turn)
        state.round += 1
        state.goto("turn")

    def _apply_effect(self, state: State) -> bool:
        """Apply the pending action; True when it waits for a decision (exchange)."""
        g = state.g
        p = g.pending
        actor, target, kind = p["actor"], p["target"], p["type"]
        if kind == "foreign_aid":
            g.coins[actor] += 2
            state.announce(f"{state.name(actor)} takes 2 coins (now {g.coins[actor]}).")
        elif kind == "tax":
            g.coins[actor] += 3
            state.announce(f"{state.name(actor)} takes 3 coins in tax (now {g.coins[actor]}).")
        elif kind in ("steal", "assassinate") and not state.seat[target].alive:
            state.announce(f"{state.name(target)} is already out: the {kind} has no further effect.")
        elif kind == "steal":
            amount = min(2, g.coins[target])
            g.coins[target] -= amount
            g.coins[actor] += amount
            state.announce(f"{state.name(actor)} steals {amount} coin{'s' if amount != 1 else ''} from "
                           f"{state.name(target)}.")
        elif kind == "assassinate":
            g.queue.insert(0, ("lose", target, "assassinated"))
        elif kind == "exchange":
            drawn = [g.deck.pop(), g.deck.pop()]
            g.options = list(g.hands[actor]) + drawn
            state.announce(f"{state.name(actor)} draws 2 cards to exchange.")
            state.tell(actor, f"You drew {drawn[0]} and {drawn[1]}. Keep {len(g.hands[actor])} of: "
                              f"{', '.join(g.options)}.")
            state.goto("exchange")
            return True
        return False

    # ------------------------------------------------------------------ losing influence
    def lose_influence(self, state: State, who: str, card: str, reason: str) -> None:
        g = state.g
        g.hands[who].remove(card)
        g.revealed[who].append(card)
        state.announce(f"{state.name(who)} loses an influence ({reason}) and reveals {card}.")
        if not g.hands[who]:
            state.eliminate(who)
            state.announce(f"{state.name(who)} has no influence left and is out.")

    def _lose_specs(self, state: State, agent: str):
        cards = tuple(sorted(set(state.g.hands[agent]), key=CARDS.index))
        return [ActionSpec("reveal", (Choice(cards, name="CARD"),), help="the face-down card you give up")]

    def _lost(self, state: State, actions: dict) -> None:
        (agent, action), = actions.items()
        self.lose_influence(state, agent, action.arg, state.g.loss_reason)
        self._continue(state)

    # ------------------------------------------------------------------ exchange
    def _keep_specs(self, state: State, agent: str):
        g = state.g
        k = len(g.hands[agent])
        options = tuple(sorted(set(g.options), key=CARDS.index))

        def check(values):
            if not fits(values, g.options):
                return f"you can keep only cards from: {', '.join(g.options)}"
            return None

        return [ActionSpec("keep", (Choice(options, name="CARD"),), repeat=k, check=check,
                           help=f"keep exactly {k} of your hand and the drawn cards; the rest go back")]

    def _keep_instructions(self, state, agent):
        g = state.g
        return f"Exchange: keep {len(g.hands[agent])} of {', '.join(g.options)}."

    def _kept(self, state: State, actions: dict) -> None:
        g = state.g
        (agent, action), = actions.items()
        rest = list(g.options)
        for card in action.values:
            rest.remove(card)
        g.hands[agent] = list(action.values)
        g.deck.extend(rest)
        state.rng.shuffle(g.deck)
        g.options = []
        state.announce(f"{state.name(agent)} returns 2 cards to the deck.")
        state.tell(agent, f"You keep {', '.join(action.values)}.")
        self._continue(state)

    # ------------------------------------------------------------------ cap
    def on_truncation(self, state: State) -> None:
        g = state.g
        key = {a: (len(g.hands[a]), g.coins[a] if g.hands[a] else -1) for a in state.agents}
        best = max(key.values())
        winners = [a for a in state.agents if key[a] == best]
        state.finish(f"turn cap reached: most influence, then most coins - {state.names(winners)}",
                     winners=winners, truncated=True)

    # ------------------------------------------------------------------ text hooks
    def goal(self, state, agent):
        return "Be the last player with influence (face-down cards)."

    def secret(self, state, agent):
        g = state.g
        lines = [f"Your face-down cards: {', '.join(g.hands[agent]) or 'none'}."]
        if g.options and g.pending and g.pending["actor"] == agent and state.phase == "exchange":
            lines.append(f"Exchange: choose from {', '.join(g.options)}.")
        return lines

    def status(self, state, agent):
        g = state.g
        return ["Players: " + "; ".join(
            f"{state.name(a)} {g.coins[a]} coins, {len(g.hands[a])} influence"
            + (f", revealed {', '.join(g.revealed[a])}" if g.revealed[a] else "") for a in state.agents) + ".",
            f"Court deck: {len(g.deck)} cards."]

    def public_data(self, state, agent):
        g = state.g
        pending = dict(g.pending) if g.pending else None
        return {"my_cards": list(g.hands[agent]), "coins": dict(g.coins),
                "influence": {a: len(g.hands[a]) for a in state.agents},
                "revealed": {a: list(g.revealed[a]) for a in state.agents}, "deck_size": len(g.deck),
                "pending": pending, "claims": [dict(c) for c in g.claims], "turn": g.turn,
                "exchange_options": list(g.options) if (pending and pending["actor"] == agent) else [],
                "copies": COPIES}

    def metrics(self, state):
        ch = state.g.challenges
        return {"challenges": len(ch), "bluffs_caught": sum(1 for c in ch if not c["honest"])}


GAME = Coup
