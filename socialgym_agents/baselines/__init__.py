"""Per-game heuristic baselines. ``socialgym_agents/baselines/<game_id>.py`` defines ``POLICY`` (a
BasePolicy subclass playing that game sensibly). :class:`HeuristicPolicy` dispatches on
``info["game"]``. A game without a baseline (one registered from another package with no
:func:`register_baseline`) is refused, never played at random under the name "heuristic":
:func:`socialgym_agents.registry.check_spec` refuses it before play when it knows the games, and
the policy refuses it at the first decision (the episode is logged as failed, with this reason)."""
from __future__ import annotations

import importlib
import importlib.util

import socialgym_env

from ..base import BasePolicy
from ..specs import PolicySpecError


# Baselines of games from outside the package: game id -> BasePolicy subclass.
_REGISTERED: dict = {}


def register_baseline(game_id: str, policy_cls: type) -> None:
    """Make ``policy_cls`` (a BasePolicy subclass) the ``scripted:heuristic`` player of a game
    registered from another package with ``socialgym_env.register_game``."""
    if not (isinstance(policy_cls, type) and issubclass(policy_cls, BasePolicy)):
        raise TypeError(f"a baseline must be a BasePolicy subclass, got {policy_cls!r}")
    _REGISTERED[game_id] = policy_cls


def heuristic_for(game_id: str):
    if game_id in _REGISTERED:
        return _REGISTERED[game_id]
    name = f"socialgym_agents.baselines.{game_id}"
    if not game_id or importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name).POLICY


def refuse_without_baseline(game_ids) -> None:
    """PolicySpecError (one line naming the games that have a baseline) when one of ``game_ids`` has none."""
    missing = [game for game in game_ids if heuristic_for(game) is None]
    if missing:
        having = [g["id"] for g in socialgym_env.list_games() if heuristic_for(g["id"]) is not None]
        raise PolicySpecError(f"scripted:heuristic has no baseline for {', '.join(map(str, missing))} (a game's package can "
                              "add one with socialgym_agents.baselines.register_baseline); games with one: "
                              f"{', '.join(having)}")


class HeuristicPolicy(BasePolicy):
    policy_id = "scripted:heuristic"
    instant = True

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self._per_game: dict = {}
        self._episode_seeds: dict = {}   # key -> the seed reset() got, for delegates made later

    def _delegate(self, game_id):
        if game_id not in self._per_game:
            cls = heuristic_for(game_id)
            self._per_game[game_id] = cls(seed=self.seed) if cls else None
        return self._per_game[game_id]

    def reset(self, key, seed=None):
        super().reset(key, seed)
        self._episode_seeds[key] = seed
        for policy in self._per_game.values():
            if policy is not None:
                policy.reset(key, seed)

    def release(self, key):
        super().release(key)
        self._episode_seeds.pop(key, None)
        for policy in self._per_game.values():
            if policy is not None:
                policy.release(key)

    def act(self, observation, info, key=("", "")):
        policy = self._delegate(info.get("game"))
        if policy is None:
            refuse_without_baseline([info.get("game")])
        if key not in policy._rngs:
            # A delegate made after this episode's reset must still draw from the episode's
            # seed, or its moves would depend on which episodes the process played before.
            policy.reset(key, self._episode_seeds.get(key))
        return policy.act(observation, info, key=key)
