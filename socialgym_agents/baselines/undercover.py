"""Undercover heuristic: every player describes its own word with one of the word's hint
words (from the pair bank, public package data), never the word itself, and votes for the
first live player (seat order) none of whose descriptions mention a hint of its own word — a
random other player when everyone fits. Civilians thus converge on the odd ones out; with
``roles_known=False`` an Undercover follows the same rule and votes for Civilians.
"""
from __future__ import annotations

import re

from socialgym_env.games.undercover import word_pairs

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info


def hints_of(word: str) -> list:
    for pair in word_pairs():
        for entry in pair:
            if entry["word"] == word:
                return list(entry["hints"])
    return []


def fits(talk: list, player: str, hints: set) -> bool:
    said = [set(re.findall(r"[a-z]+", t.lower())) for _, a, t in talk if a == player]
    return any(words & hints for words in said)


class UndercoverHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:undercover"

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        phase, rng = info.get("phase"), self.rng(key)
        if "word" not in gs:
            return Decision(sample_from_info(info, rng))
        hints = hints_of(gs["word"])
        if phase == "description" and hints:
            return Decision(f"say It makes me think of {hints[(gs['round'] - 1) % len(hints)]}.")
        if phase == "vote":
            others = [a for a in gs["alive"] if a != info["agent"]]
            odd = [a for a in others if not fits(gs["talk"], a, set(hints))]
            return Decision(f"vote {odd[0] if odd else rng.choice(others)}")
        return Decision(sample_from_info(info, rng))


POLICY = UndercoverHeuristic
