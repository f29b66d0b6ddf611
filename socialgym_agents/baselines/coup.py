"""Coup heuristics: an honest player (``POLICY``) and a bluffing variant (``BLUFFER``).

Honest (``scripted:heuristic:coup``): claims only characters it holds. Turn: coup the strongest
opponent with 7+ coins; assassinate with an Assassin and 3+ coins; tax with a Duke; steal with a
Captain from a rich opponent; exchange with an Ambassador and no better card; else income.
Responses: blocks only with the card it holds (Duke vs foreign aid, Contessa vs an
assassination of itself, Captain/Ambassador vs a steal from itself); challenges a claim when it
is unlikely given what it can see — the copies of the claimed card not in its own hand and not
revealed, spread over the unseen pool (deck + opponents' face-down cards) — or when it is being
assassinated and cannot otherwise survive. Loses its least useful card; keeps the best cards.

Bluffer (``BLUFFER``): the same, but claims Duke for tax and Captain for steals it cannot back,
when its nerve holds (less often once it has lost an influence), and blocks every foreign aid,
steal and assassination it may block (blocks cannot be challenged in this ruleset).
"""
from __future__ import annotations

from math import comb

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

COPIES = 3
# Most useful first: what to keep in an exchange, and the last to reveal.
VALUE = ("Duke", "Assassin", "Captain", "Contessa", "Ambassador")
CHALLENGE_BELOW = 0.3


def holds_probability(card: str, holder: str, gs: dict, me: str) -> float:
    """P(``holder`` holds at least one ``card``) from this seat's view: the unseen copies are
    spread uniformly over the unseen pool (deck + every opponent's face-down cards)."""
    seen = gs["my_cards"].count(card) + sum(r.count(card) for r in gs["revealed"].values())
    unseen_copies = max(COPIES - seen, 0)
    pool = gs["deck_size"] + sum(n for a, n in gs["influence"].items() if a != me)
    hand = gs["influence"].get(holder, 0)
    if unseen_copies == 0 or hand == 0 or pool <= 0:
        return 0.0
    return 1.0 - comb(pool - unseen_copies, hand) / comb(pool, hand)


def strongest(gs: dict, candidates) -> str:
    return max(sorted(candidates), key=lambda a: (gs["influence"][a], gs["coins"][a]))


class CoupHonest(BasePolicy):
    policy_id = "scripted:heuristic:coup"
    bluffs = False

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        if "my_cards" not in gs:
            return Decision(sample_from_info(info, self.rng(key)))
        handler = getattr(self, f"_{info.get('phase')}", None)
        if handler is None:
            return Decision(sample_from_info(info, self.rng(key)))
        return Decision(handler(gs, info["agent"], key))

    # ---------------------------------------------------------------- decisions
    def _turn(self, gs, me, key):
        cards, coins = gs["my_cards"], gs["coins"][me]
        opponents = [a for a, n in gs["influence"].items() if a != me and n > 0]
        target = strongest(gs, opponents)
        if coins >= 7:
            return f"coup {target}"
        if "Assassin" in cards and coins >= 3:
            return f"assassinate {target}"
        if "Duke" in cards:
            return "tax"
        rich = max(sorted(opponents), key=lambda a: gs["coins"][a])
        if "Captain" in cards and gs["coins"][rich] >= 2:
            return f"steal {rich}"
        if self.bluffs and self._dare(gs, key):
            if gs["coins"][rich] >= 2 and self.rng(key).random() < 0.5:
                return f"steal {rich}"
            return "tax"
        if "Ambassador" in cards:
            return "exchange"
        return "income"

    def _dare(self, gs, key) -> bool:
        """A bluffer's nerve: bluff less when one more lost influence would be fatal."""
        return self.rng(key).random() < (0.5 if len(gs["my_cards"]) >= 2 else 0.15)

    def _respond(self, gs, me, key):
        cards, pending = gs["my_cards"], gs["pending"]
        kind, actor, target, claim = pending["type"], pending["actor"], pending["target"], pending["claim"]
        if self.bluffs and (kind == "foreign_aid" or target == me) and kind in ("foreign_aid", "steal", "assassinate"):
            # blocks cannot be challenged (the Coup rules), so a bluffed block is free
            return "block Captain" if kind == "steal" else "block"
        if kind == "foreign_aid":
            return "block" if "Duke" in cards else "pass"
        if kind == "assassinate" and target == me:
            if "Contessa" in cards:
                return "block"
            if claim and len(cards) == 1:
                return "challenge"   # losing the last card either way: only a challenge can save it
        if kind == "steal" and target == me:
            for card in ("Captain", "Ambassador"):
                if card in cards:
                    return f"block {card}"
        if claim and holds_probability(claim, actor, gs, me) < CHALLENGE_BELOW:
            return "challenge"
        return "pass"

    def _lose(self, gs, me, key):
        cards = sorted(set(gs["my_cards"]), key=VALUE.index)
        return f"reveal {cards[-1]}"

    def _exchange(self, gs, me, key):
        k = len(gs["my_cards"])
        ranked = sorted(gs["exchange_options"], key=VALUE.index)
        keep, rest = [], []
        for card in ranked:   # distinct cards first, then duplicates
            (rest if card in keep else keep).append(card)
        chosen = (keep + rest)[:k]
        return "keep " + " ".join(chosen)


class CoupBluffer(CoupHonest):
    policy_id = "scripted:heuristic:coup:bluffer"
    bluffs = True


POLICY = CoupHonest
BLUFFER = CoupBluffer
