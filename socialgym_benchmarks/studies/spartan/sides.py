"""Which seats form a game's sides, and whether a side won an episode.

* A game that declares ``GameInfo.main_role`` and ``alt_role`` (every hidden-role game) has two
  sides: ``alt`` is the team of the alt role (the minority/deceptive side: Werewolves, Spies,
  the Chameleon...), ``main`` the team of the main role (its whole team: the Seer and the Witch
  are on the Villagers' side).
* A game whose seats all hold the same role (Prisoner's Dilemma, Stag Hunt...) is symmetric: each
  seat is a side (``seat0``, ``seat1``...) and the tables pool them, as the paper does for PD.
* Any other game (chess: White vs Black) declares no sides and is refused with that reason.

A side wins an episode when its seats' reward is positive (a team game rewards a team as one; a
tie or a draw is not a win).
"""
from __future__ import annotations

from dataclasses import dataclass

import socialgym_env


@dataclass(frozen=True)
class Sides:
    game: str
    symmetric: bool
    names: tuple            # ("alt", "main") or ("seat0", "seat1", ...)
    teams: dict             # asymmetric: side -> team

    def seats(self, env, side: str) -> list[str]:
        """The seat ids on ``side`` in the deal ``env`` was reset with."""
        if side not in self.names:
            raise ValueError(f"{self.game} has sides {', '.join(self.names)}, not {side!r}")
        if self.symmetric:
            return [env.possible_agents[self.names.index(side)]]
        return [seat.agent for seat in env.state.seats if seat.team == self.teams[side]]

    def won(self, record: dict, side: str) -> bool:
        rewards = record.get("rewards") or {}
        if self.symmetric:   # the roster lists seats in seat order
            seats = [record["roster"][self.names.index(side)]["agent"]]
        else:
            seats = [s["agent"] for s in record["roster"] if s.get("team") == self.teams[side]]
        return any(float(rewards.get(a, 0)) > 0 for a in seats)


def game_sides(game: str) -> Sides:
    cls = socialgym_env.game_class(game)
    info = cls.info
    if info.main_role and info.alt_role:
        team_of = {role: team for role, _, team in info.roles}
        if info.alt_role not in team_of or info.main_role not in team_of:
            raise ValueError(f"{game}: main_role/alt_role must be roles of GameInfo.roles")
        return Sides(game, False, ("alt", "main"), {"alt": team_of[info.alt_role], "main": team_of[info.main_role]})
    deck = cls(dict(cls.config_defaults)).role_deck()
    if len(set(deck)) == 1:
        return Sides(game, True, tuple(f"seat{i}" for i in range(len(deck))), {})
    raise ValueError(f"{game} has asymmetric roles but declares no sides (GameInfo.main_role/alt_role); "
                     "SPaRTan evaluates hidden-role games and symmetric games")
