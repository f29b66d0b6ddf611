"""Many sessions of a ``socialgym serve-env`` server as one vector env, over OpenEnv's own client.

:class:`RemoteVecEnv` has the shape of :class:`socialgym_agents.single_agent.SingleAgentVecEnv`
(``reset(seeds)``, ``step(actions)``, ``dones``, ``close()``), so a rollout loop written for the
local vector env plays through the server unchanged (``socialgym_training/grpo_games.py --env_server``).
Each env is one WebSocket session of OpenEnv's ``GenericEnvClient`` (its synchronous wrapper);
an env whose episode ended is not stepped again until reset, and its last result is repeated.

The infos are the server's, i.e. the seat's own view: no ``true_role`` (use ``role``, what the
seat is shown) and no episode record.
"""
from __future__ import annotations

from typing import Optional, Sequence


class RemoteVecEnv:
    def __init__(self, base_url: str, game: str, seat_or_role="player_0", opponents: Sequence[str] = (),
                 num_envs: int = 1, pool=None, **config):
        from openenv.core.generic_client import GenericEnvClient

        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.options = {"game": game, "seat": seat_or_role, "config": dict(config)}
        if opponents:
            self.options["opponents"] = list(opponents)
        self.clients = [GenericEnvClient(base_url=base_url).sync() for _ in range(num_envs)]
        for client in self.clients:
            client.connect()
        self.num_envs = num_envs
        self._last: list = [None] * num_envs

    def reset(self, seeds: Sequence[Optional[int]]):
        if len(seeds) != self.num_envs:
            raise ValueError(f"give one seed per env ({self.num_envs}), got {len(seeds)}")
        results = [client.reset(seed=seed, **self.options) for client, seed in zip(self.clients, seeds)]
        self._last = [self._unpack(r) for r in results]
        return [last[0] for last in self._last], [last[4] for last in self._last]

    def step(self, actions: Sequence[Optional[str]]):
        if len(actions) != self.num_envs:
            raise ValueError(f"give one action per env ({self.num_envs}), got {len(actions)}")
        for index, (client, action) in enumerate(zip(self.clients, actions)):
            if self._last[index] is None:
                raise RuntimeError("call reset() before step()")
            if self.dones[index]:
                continue
            self._last[index] = self._unpack(client.step({"message": "" if action is None else str(action)}))
        return tuple([last[k] for last in self._last] for k in range(5))

    @property
    def dones(self) -> list[bool]:
        return [bool(last and (last[2] or last[3])) for last in self._last]

    @staticmethod
    def _unpack(result):
        observation = result.observation
        info = dict(observation["info"])
        truncated = bool(observation.get("truncated"))
        terminated = bool(result.done) and not truncated
        return {"text": observation["text"]}, float(result.reward or 0.0), terminated, truncated, info

    def close(self) -> None:
        for client in self.clients:
            client.close()
