"""Spyfall heuristic. Non-Spies mention a keyword of their location (from the location
bank, public package data) and vote for the live player whose messages mention the fewest
keywords of the location. The Spy stays vague until the others' messages point to one
location (most keyword hits), then mentions a keyword of it; with ``spy_can_guess`` it guesses
once the evidence is clear (two hits more than any other location). The Spy votes for a
random other player.
"""
from __future__ import annotations

import re

from socialgym_env.games.spyfall import locations

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

VAGUE = ("It is about what I expected here.", "Hard to say, it depends on the day.",
         "I have been here before, nothing special.")


def tokens(text: str) -> set:
    return set(re.findall(r"[a-z]+", text.lower()))


def keywords(name: str) -> set:
    return set(next(loc for loc in locations() if loc["name"] == name)["keywords"])


def location_scores(talk: list, me: str) -> dict:
    """Keyword hits of each location in the other players' messages."""
    words = [tokens(t) for _, a, t in talk if a != me]
    return {loc["name"]: sum(len(w & set(loc["keywords"])) for w in words) for loc in locations()}


def vagueness(talk: list, player: str, kws: set) -> float:
    """Share of a player's messages without a keyword (1.0 when it never spoke)."""
    said = [tokens(t) for _, a, t in talk if a == player]
    if not said:
        return 1.0
    return sum(not (w & kws) for w in said) / len(said)


class SpyfallHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:spyfall"

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        phase, rng = info.get("phase"), self.rng(key)
        if "talk" not in gs:
            return Decision(sample_from_info(info, rng))
        me, location = info["agent"], gs["location"]
        others = [a for a in gs["alive"] if a != me]
        if phase == "questioning":
            if location is not None:
                return Decision(f"say I keep thinking about the {rng.choice(sorted(keywords(location)))}.")
            scores = location_scores(gs["talk"], me)
            ranked = sorted(scores.values(), reverse=True)
            best = [n for n, s in scores.items() if s == ranked[0]]
            if gs["spy_can_guess"] and ranked[0] >= ranked[1] + 2:
                return Decision(f"guess {best[0]}")
            if ranked[0] >= 1 and len(best) == 1:
                return Decision(f"say I keep thinking about the {rng.choice(sorted(keywords(best[0])))}.")
            return Decision(f"say {rng.choice(VAGUE)}")
        if phase == "vote":
            if location is None:
                return Decision(f"vote {rng.choice(others)}")
            kws = keywords(location)
            return Decision(f"vote {max(others, key=lambda a: vagueness(gs['talk'], a, kws))}")
        return Decision(sample_from_info(info, rng))


POLICY = SpyfallHeuristic
