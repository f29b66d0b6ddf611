"""Heuristic for Battle of the Sexes: take turns, and let the first speaker decide.

The first speaker of a round announces its pick (its own preference in round 1, then the
option it did not get last time); a second speaker echoes the announcement it heard; both then
choose what the round's first announcement named. Without an announcement (a partner who said
something else) it falls back to the alternation.
"""
import re

from ..base import BasePolicy, Decision

ANNOUNCEMENT = re.compile(r"I will choose (\w+) this round")


class TakeTurns(BasePolicy):
    policy_id = "scripted:heuristic:battle_of_the_sexes"

    def alternation(self, state, me):
        x, y = state.get("options", ("", ""))
        mine, theirs = (x, y) if me == "player_0" else (y, x)
        history = state.get("history") or []
        if not history:
            return mine
        return theirs if history[-1][me] == mine else mine

    def announced(self, observation, state):
        """The first option announced in this round's talk, if any."""
        prefix = f"[R{state.get('round')} talk]"
        for line in observation.get("text", "").splitlines():
            match = ANNOUNCEMENT.search(line) if line.startswith(prefix) else None
            if match and match.group(1) in state.get("options", ()):
                return match.group(1)
        return None

    def act(self, observation, info, key=("", "")):
        state = info.get("game_state") or {}
        move = self.announced(observation, state) or self.alternation(state, key[1])
        if info.get("phase") == "talk":
            return Decision(f"say I will choose {move} this round.")
        return Decision(move)


POLICY = TakeTurns
