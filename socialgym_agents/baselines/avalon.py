"""Heuristic baseline for Avalon: The Resistance's heuristic on quests, plus Merlin's sight and
the Assassin's guess.

Reads only what its seat may see: ``info["game_state"]`` (public quests, proposals, votes,
results, ``evil_count`` and ``fails_needed``; ``known_evil`` for Merlin and for the evil players
Oberon excepted) and ``info["team"]``.

- Evil: as a Resistance Spy, its known fellows its team (Oberon knows only himself); on a quest
  that needs two fail cards every evil member fails.
- Good: as a Resistance member, weighing only the evil sets that hold every player it was shown
  as evil (Merlin's sight; Percival and the Servants see none), so Merlin keeps known evil off
  its teams and rejects teams with them.
- Assassin: names the player whose votes tracked the evil players best (rejected the teams it
  knows held evil, approved those it knows did not), ties broken by the seat's RNG.
"""
from __future__ import annotations

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.baselines.resistance import _MOVES as QUEST_MOVES
from socialgym_agents.scripted import sample_from_info


def merlin_likeness(game: dict, me: str, known_evil) -> dict:
    """Per other player not known to be evil: how many of its votes matched what Merlin would
    vote, judged by ``known_evil`` (the Assassin's fellows)."""
    evil = set(known_evil) | {me}
    score = {a: 0 for a in game["players"] if a not in evil}
    for proposal in game["proposals"]:
        tainted = any(a in evil for a in proposal["team"])
        for voter, vote in proposal["votes"].items():
            if voter in score and (vote == "reject") == tainted:
                score[voter] += 1
    return score


def _assassinate(game: dict, me: str, known_evil, rng) -> str:
    score = merlin_likeness(game, me, known_evil)
    best = max(score.values())
    choice = rng.choice(sorted(a for a, s in score.items() if s == best))
    return f"assassinate {game['players'][choice]}"


class AvalonHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:avalon"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        game = info.get("game_state") or {}
        phase, me = info.get("phase"), info["agent"]
        evil = info.get("team") == "evil"
        known = list(game.get("known_evil", ()))
        if phase == "assassination":
            return Decision(_assassinate(game, me, known, rng))
        if phase == "assassination_talk":
            return Decision("pass")
        move = QUEST_MOVES.get("mission" if phase == "quest" else phase)
        if move is None:
            return Decision(sample_from_info(info, rng))
        return Decision(move(game, me, known + [me] if evil else None, rng))


POLICY = AvalonHeuristic
