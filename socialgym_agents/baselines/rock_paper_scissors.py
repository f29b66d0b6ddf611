"""Heuristic for Rock-Paper-Scissors: play what beats the opponent's most frequent move so far
(random on the first round and on ties) — it exploits any biased opponent."""
from collections import Counter

from ..base import BasePolicy, Decision

BEATEN_BY = {"rock": "paper", "paper": "scissors", "scissors": "rock"}


class FrequencyCounter(BasePolicy):
    policy_id = "scripted:heuristic:rock_paper_scissors"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        history = (info.get("game_state") or {}).get("history") or []
        counts = Counter(move for round_moves in history for agent, move in round_moves.items() if agent != key[1])
        if not counts:
            return Decision(rng.choice(list(BEATEN_BY)))
        top = max(counts.values())
        favourite = rng.choice(sorted(m for m, c in counts.items() if c == top))
        return Decision(BEATEN_BY[favourite])


POLICY = FrequencyCounter
