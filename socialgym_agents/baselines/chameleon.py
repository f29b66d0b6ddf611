"""Chameleon heuristic. It reads the topic card, the clues and (Citizens) the secret word from
``info["game_state"]``, and the card's associated hint words from the game's data file (public
package data, the same for every seat).

- Citizen clue: one of the secret word's hint words. Chameleon clue: if earlier clues point to
  one card word (most clues among its hints), a hint of that word (blending in); otherwise the
  card's category (a generic clue).
- Citizens suspect the first player whose clue is not a hint of the secret word, say so in the
  discussion and vote for them (a random other player when nobody looks off). The Chameleon
  votes for a random other player.
- Caught Chameleon: guesses the card word whose hints match the most clues.
"""
from __future__ import annotations

from socialgym_env.games.chameleon import topic_cards
from socialgym_env.patterns import normalize_word

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info


def card_hints(category: str) -> dict:
    """{card word: set of normalized hint words} of the card with this category."""
    card = next(c for c in topic_cards() if c["category"] == category)
    return {w["word"]: {normalize_word(h) for h in w["hints"]} for w in card["words"]}


def best_word(hints: dict, clues: list) -> tuple[list, int]:
    """The card words that match the most clues, and that count."""
    clue_keys = [normalize_word(c) for _, c in clues]
    scores = {w: sum(c in hs for c in clue_keys) for w, hs in hints.items()}
    top = max(scores.values())
    return [w for w, s in scores.items() if s == top], top


def suspects(gs: dict, hints: dict, me: str) -> list:
    word = gs["secret_word"]
    return [a for a, c in gs["clues"] if a != me and normalize_word(c) not in hints[word]]


class ChameleonHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:chameleon"

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        phase, rng = info.get("phase"), self.rng(key)
        if "category" not in gs:
            return Decision(sample_from_info(info, rng))
        hints = card_hints(gs["category"])
        citizen = gs["secret_word"] is not None
        if phase == "clue":
            if citizen:
                return Decision(f"clue {rng.choice(sorted(hints[gs['secret_word']]))}")
            words, score = best_word(hints, gs["clues"])
            if score >= 1 and len(words) == 1:
                return Decision(f"clue {rng.choice(sorted(hints[words[0]]))}")
            return Decision(f"clue {normalize_word(gs['category'])}")
        if phase == "discussion":
            if citizen and suspects(gs, hints, info["agent"]):
                return Decision(f"say I think {suspects(gs, hints, info['agent'])[0]} is the Chameleon: that clue does not fit.")
            return Decision("say All the clues look fine to me.")
        if phase == "vote":
            others = [a for a, _ in gs["clues"] if a != info["agent"]]
            if citizen and suspects(gs, hints, info["agent"]):
                return Decision(f"vote {suspects(gs, hints, info['agent'])[0]}")
            return Decision(f"vote {rng.choice(others)}")
        if phase == "guess":
            words, _ = best_word(hints, gs["clues"])
            return Decision(f"guess {words[0]}")
        return Decision(sample_from_info(info, rng))


POLICY = ChameleonHeuristic
