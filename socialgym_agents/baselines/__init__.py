"""Per-game heuristic baselines. ``socialgym_agents/baselines/<game_id>.py`` defines ``POLICY`` (a
BasePolicy subclass playing that game sensibly). :class:`HeuristicPolicy` dispatches on
``info["game"]`` and plays randomly in a game that has no heuristic module."""
from __future__ import annotations

import importlib
import importlib.util

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info


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
            return Decision(sample_from_info(info, self.rng(key)))
        if key not in policy._rngs:
            # A delegate made after this episode's reset must still draw from the episode's
            # seed, or its moves would depend on which episodes the process played before.
            policy.reset(key, self._episode_seeds.get(key))
        return policy.act(observation, info, key=key)
