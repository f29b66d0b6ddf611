"""Skill ratings people recognise: openskill's Plackett–Luce model (Weng and Lin's Bayesian
approximation), which rates a whole N-player finishing order or a team result in one update.

The arena keeps them live (``/api/ratings``, updated as each game is logged) and the leaderboard
offers them beside its Bradley–Terry fit (``socialgym leaderboard --rating openskill``); both read
episode records, so this lives in the lowest layer that rates (the arena is in this one).

How an episode becomes one openskill match (:func:`episode_teams`):

- free-for-all: each policy is one side; seats of the same policy (self-play) are merged into
  that side, valued at their mean, so an episode counts once per competitor;
- team games (two or more named teams in the roster): each team is one side holding its seats'
  distinct policies, valued at the mean of its seats;
- a policy on more than one side (it would play against itself) is left out of that episode;
  an episode left with fewer than two sides, or a failed or unfinished one, is not rated.

The values compared are the seats' rewards, or scores where the game ranks by score
(:func:`seat_values`, shared with the Bradley–Terry battles). Sides with equal values tie.
Updates are sequential, so the ratings depend on the order of the episodes (log order here).
"""
from __future__ import annotations

import functools
import threading
from collections import Counter, defaultdict
from typing import Iterable, Optional

from socialgym_env.errors import SocialGymError
from socialgym_env.registry import game_class

Z_95 = 1.959963984540054        # the two-sided 95% normal quantile for mu +- z sigma


def seat_values(record: dict, compare: str = "reward") -> Optional[dict]:
    """Per-seat value the pairs are compared on: the outcome reward (default) or the score.
    A game that declares ``rank_by="score"`` (Dead Last: a larger share beats a smaller one)
    is always compared on scores."""
    if record.get("failed") or not record.get("finished", True):
        return None
    if _ranks_by_score(record.get("game")):
        compare = "score"
    values = record.get("rewards") if compare == "reward" else record.get("scores")
    return values or None


@functools.lru_cache(maxsize=None)
def _ranks_by_score(game_id: Optional[str]) -> bool:
    try:
        return game_class(game_id).info.rank_by == "score"
    except SocialGymError:          # a game this install does not know: compare rewards
        return False


def is_team_record(record: dict) -> bool:
    """Two or more distinct non-empty teams in the roster: only cross-team pairs count."""
    teams = {seat.get("team") or "" for seat in record.get("roster", [])}
    teams.discard("")
    return len(teams) >= 2


def episode_teams(record: dict) -> Optional[tuple[list[list[str]], list[float]]]:
    """The episode as one openskill match: ``(teams, values)``, each team the sorted distinct
    policies of one side and its value (higher is better); None if it rates nothing (see
    the module docstring)."""
    values = seat_values(record)
    if values is None:
        return None
    team_game = is_team_record(record)
    sides = defaultdict(list)                   # side -> [(policy, value)] of its seats
    for seat in record.get("roster", []):
        policy = seat.get("policy")
        if policy and seat.get("agent") in values:
            side = (seat.get("team") or "") if team_game else policy
            sides[side].append((policy, float(values[seat["agent"]])))
    sides_of = Counter(policy for seats in sides.values() for policy in {p for p, _ in seats})
    teams, team_values = [], []
    for side in sorted(sides):
        kept = [(p, v) for p, v in sides[side] if sides_of[p] == 1]
        if kept:
            teams.append(sorted({p for p, _ in kept}))
            team_values.append(sum(v for _, v in kept) / len(kept))
    return (teams, team_values) if len(teams) >= 2 else None


class SkillRatings:
    """openskill Plackett–Luce ratings (mu, sigma; every competitor starts at mu 25, sigma 25/3),
    updated one episode record at a time; safe to update from several threads."""

    def __init__(self):
        from openskill.models import PlackettLuce     # the serve and bench extras install openskill

        self.model = PlackettLuce()
        self._ratings: dict = {}
        self._episodes: Counter = Counter()
        self._lock = threading.Lock()

    def update(self, record: dict) -> bool:
        """Rate one episode record; False (and nothing changes) if it rates nothing."""
        match = episode_teams(record)
        if match is None:
            return False
        teams, team_values = match
        with self._lock:
            current = [[self._ratings.get(p) or self.model.rating(name=p) for p in team] for team in teams]
            updated = self.model.rate(current, scores=team_values)
            for team, ratings in zip(teams, updated):
                for policy, rating in zip(team, ratings):
                    self._ratings[policy] = rating
                    self._episodes[policy] += 1
        return True

    def update_all(self, records: Iterable[dict]) -> int:
        """Rate the records in order; how many were rated."""
        return sum(self.update(record) for record in records)

    def table(self) -> list[dict]:
        """One row per competitor, best first by the conservative ``ordinal`` (mu - 3 sigma):
        ``player``, ``mu``, ``sigma``, ``ordinal``, the 95% interval ``lo``/``hi`` (mu +- 1.96
        sigma) and the ``episodes`` it was rated in."""
        with self._lock:
            rows = [{"player": policy, "mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal(),
                     "lo": r.mu - Z_95 * r.sigma, "hi": r.mu + Z_95 * r.sigma, "episodes": self._episodes[policy]}
                    for policy, r in self._ratings.items()]
        return sorted(rows, key=lambda row: (-row["ordinal"], row["player"]))


def skill_table(records: Iterable[dict]) -> list[dict]:
    """The openskill table of a run's records, rated in their order."""
    ratings = SkillRatings()
    ratings.update_all(records)
    return ratings.table()
