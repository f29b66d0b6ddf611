"""Hanabi heuristic: play only what is certainly playable, hint what a partner can play now,
otherwise discard what is certainly useless or the oldest card nobody hinted.

In order, each turn:

1. play a card of its own hand that the hints prove playable: every colour and rank it may
   still be (a hinted colour or rank, minus those a hint ruled out) fits on its firework;
2. with a token: hint the first partner (in seat order) holding a card that is playable now but
   not yet proven playable to them — its rank when the rank alone proves it (every firework
   the card could go on stands one below), otherwise whichever of colour and rank the partner
   has not been told yet;
3. when a discard is allowed: discard a card the hints prove useless (its rank is at or below
   its firework for every colour it may be), else the oldest card without any hint;
4. otherwise (every token available, nothing to hint): the first legal hint.

It never plays a card the hints leave in doubt, so it burns no fuse. Reads only
``info["game_state"]``.
"""
from __future__ import annotations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

RANKS = (1, 2, 3, 4, 5)


def possible(told: dict, colours) -> tuple[list, list]:
    """The colours and ranks a card may still be, from what its holder was told."""
    colour_options = [told["colour"]] if told["colour"] else [c for c in colours if c not in told["not_colours"]]
    rank_options = [told["rank"]] if told["rank"] else [r for r in RANKS if r not in told["not_ranks"]]
    return colour_options, rank_options


def surely_playable(told: dict, fireworks: dict, colours) -> bool:
    colour_options, rank_options = possible(told, colours)
    return all(fireworks[c] == r - 1 for c in colour_options for r in rank_options)


def surely_useless(told: dict, fireworks: dict, colours) -> bool:
    colour_options, rank_options = possible(told, colours)
    return all(r <= fireworks[c] for c in colour_options for r in rank_options)


def _is_told(told: dict) -> bool:
    return bool(told["colour"] or told["rank"] or told["not_colours"] or told["not_ranks"])


class HanabiCautious(BasePolicy):
    policy_id = "scripted:heuristic:hanabi"

    def act(self, observation, info, key=("", "")):
        state = info.get("game_state") or {}
        legal = info.get("legal_action_list") or []
        if info.get("phase") != "turn" or "my_hand" not in state:
            return Decision(sample_from_info(info, self.rng(key)))
        for choice in (self._play, self._hint, self._discard):
            move = choice(state)          # legal by construction (a hint names a card the partner holds)
            if move is not None:
                return Decision(move)
        hints = [move for move in legal if move.startswith("hint")]
        return Decision(hints[0] if hints else sample_from_info(info, self.rng(key)))

    def _play(self, state) -> str | None:
        for slot, told in enumerate(state["my_hand"], 1):
            if surely_playable(told, state["fireworks"], state["colours"]):
                return f"play {slot}"
        return None

    def _hint(self, state) -> str | None:
        if state["information_tokens"] == 0:
            return None
        fireworks, colours = state["fireworks"], state["colours"]
        for partner, cards in state["hands"].items():      # in seat order
            for card in cards:
                colour, rank = card["card"]
                if fireworks[colour] != rank - 1 or surely_playable(card, fireworks, colours):
                    continue
                by_rank = dict(card, rank=rank)
                if card["rank"] is None and surely_playable(by_rank, fireworks, colours):
                    return f"hint {partner} {rank}"
                return f"hint {partner} {colour if card['colour'] is None else rank}"
        return None

    def _discard(self, state) -> str | None:
        if state["information_tokens"] >= state["max_information_tokens"]:
            return None
        hand, fireworks, colours = state["my_hand"], state["fireworks"], state["colours"]
        for slot, told in enumerate(hand, 1):
            if surely_useless(told, fireworks, colours):
                return f"discard {slot}"
        fresh = [slot for slot, told in enumerate(hand, 1) if not _is_told(told)]
        return f"discard {fresh[0] if fresh else 1}"


POLICY = HanabiCautious
