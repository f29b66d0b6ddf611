"""Heuristic baseline for The Resistance.

Reads only what its seat may see: ``info["game_state"]`` (public missions, proposals, results,
and ``known_spies`` for a Spy) and ``info["role"]``.

- Spy: proposes itself plus non-Spies; approves a team only if it holds a Spy (rejects every
  5th proposal, which wins outright); on a mission plays fail unless its fellow Spy on the same
  team (lower seat) already does.
- Resistance: weighs every possible pair of Spies among the others by the mission results
  (a result with f fail cards needs f Spies on the team); proposes itself plus the least
  suspected players; approves only a team no riskier than the one it would propose itself
  (and always the 5th proposal, whose rejection would lose); always plays success.
"""
from __future__ import annotations

import itertools

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.scripted import sample_from_info


def suspicion(game: dict, me: str) -> dict:
    """Per player, the probability of being a Spy given the mission results, over every set
    of Spies among the others (``game["evil_count"]`` of them, 2 when the game does not say; a
    mission with f fail cards needs at least f Spies on it; a clean mission with a Spy on it is
    less likely, weight 0.3). Only sets holding every player the seat was shown as evil
    (``known_evil``: Avalon's Merlin) count."""
    others = [a for a in game["players"] if a != me]
    known = set(game.get("known_evil", ()))
    weights = {}
    for group in itertools.combinations(others, game.get("evil_count", 2)):
        if not known.issubset(group):
            continue
        w = 1.0
        for result in game["results"]:
            spies_on = sum(1 for x in result["team"] if x in group)
            if result["fails"] > spies_on:
                w = 0.0
            elif result["fails"] == 0 and spies_on:
                w *= 0.3
        weights[group] = w
    total = sum(weights.values()) or 1.0
    scores = {a: 0.0 for a in game["players"]}
    for group, w in weights.items():
        for a in group:
            scores[a] += w / total
    return scores


def spy_risk(team, scores: dict, game: dict, me: str) -> float:
    """Probability that ``team`` holds a Spy (from the same pair weights, approximated)."""
    clean = 1.0
    for a in team:
        if a != me:
            clean *= 1.0 - scores[a]
    return 1.0 - clean


def _propose(game: dict, me: str, spies, rng) -> str:
    size = game["team_size"]
    others = [a for a in game["players"] if a != me]
    if spies:
        pool = [a for a in others if a not in spies]
        rng.shuffle(pool)
        team = [me] + pool[: size - 1]
    else:
        scores = suspicion(game, me)
        rng.shuffle(others)
        others.sort(key=lambda a: scores[a])
        team = [me] + others[: size - 1]
    return "propose " + " ".join(game["players"][a] for a in team)


def _vote(game: dict, me: str, spies, rng) -> str:
    team = game["team"]
    last_chance = game["rejections"] >= 4
    if spies:
        if last_chance:
            return "reject"
        return "approve" if any(a in spies for a in team) else "reject"
    if last_chance:
        return "approve"
    scores = suspicion(game, me)
    others = sorted((a for a in game["players"] if a != me), key=lambda a: scores[a])
    best = spy_risk([me] + others[: len(team) - 1], scores, game, me)
    return "approve" if spy_risk(team, scores, game, me) <= best + 1e-9 else "reject"


def _mission(game: dict, me: str, spies, rng) -> str:
    if not spies:
        return "success"
    if game.get("fails_needed", ())[game["mission"] - 1:game["mission"]] == [2]:
        return "fail"          # a mission that two fail cards fail (Avalon): every Spy on it fails
    partners_on_team = [a for a in game["team"] if a in spies and a != me]
    index = list(game["players"]).index
    if any(index(a) < index(me) for a in partners_on_team):
        return "success"
    return "fail"


# phase -> move(game state, own seat, known Spies (a Spy's view only), rng)
_MOVES = {"discussion": lambda game, me, spies, rng: "pass", "proposal": _propose, "vote": _vote,
          "mission": _mission}


class ResistanceHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:resistance"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        game = info.get("game_state") or {}
        move = _MOVES.get(info.get("phase"))
        me = info["agent"]
        if move is None:
            return Decision(sample_from_info(info, rng))
        return Decision(move(game, me, game.get("known_spies"), rng))


POLICY = ResistanceHeuristic
