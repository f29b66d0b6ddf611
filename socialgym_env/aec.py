"""The PettingZoo AEC turn protocol's bookkeeping, shared by the engine and the benchmarks'
do-nothing floor env: what every AEC env does at reset and at the start of a step, whatever
game it runs."""
from __future__ import annotations

from typing import Optional

from pettingzoo import AECEnv


def start_aec_episode(env: AECEnv) -> None:
    """The PettingZoo AEC bookkeeping of a fresh episode: every possible agent live, no
    rewards yet, nobody terminated or truncated, empty infos."""
    env.agents = agents = env.possible_agents[:]
    env.rewards = dict.fromkeys(agents, 0.0)
    env._cumulative_rewards = dict.fromkeys(agents, 0.0)
    env.terminations = dict.fromkeys(agents, False)
    env.truncations = dict.fromkeys(agents, False)
    env.infos = {a: {} for a in agents}


def begin_aec_step(env: AECEnv, action) -> Optional[str]:
    """The PettingZoo AEC step prologue: a terminated or truncated agent's step only removes
    it (None is returned); otherwise the acting agent's reward of the last step is cleared and
    the agent returned."""
    agent = env.agent_selection
    if env.terminations[agent] or env.truncations[agent]:
        env._was_dead_step(action)
        return None
    env._cumulative_rewards[agent] = 0.0
    env._clear_rewards()
    return agent
