"""SPIRAL's own two-player loop (spiral-rl 0.2.0) on a Social Gym game: its ``make_env``
(spiral/core/envs/__init__.py lines 90-98: ``ta.make`` plus an LLMObservationWrapper, so it takes
a ``-raw`` id), its ``TwoPlayerCoordinator`` and ``SpiralTwoPlayerEnv``
(spiral/tinker/training/env.py lines 39-290) with ``error_allowance = 0`` as its group builder
sets it (lines 343-347), both seats played concurrently as tinker's rollout does. Stubbed: tinker,
tinker-cookbook and weave (imported, unused here), and SPIRAL's renderer (a tokenizer's chat
template) by one that hands the observation text through. Prints a JSON summary.

    python spiral_two_player.py ENV_ID SEED[,SEED...]     # one JSON object per seed, in a list
"""
import asyncio
import json
import random
import re
import sys

from stubs import bare_package, stub_tinker

stub_tinker()
bare_package("spiral")
bare_package("spiral.tinker")
bare_package("spiral.tinker.training")
from spiral.core.envs import make_env                                          # noqa: E402
from spiral.tinker.training.env import SpiralTwoPlayerEnv, TwoPlayerCoordinator  # noqa: E402

import socialgym_env.textarena                                                  # noqa: E402,F401

env_id, seeds = sys.argv[1], [int(seed) for seed in sys.argv[2].split(",")]


class PassThroughRenderer:
    def get_stop_sequences(self):
        return []

    def parse_response(self, action):
        return {"role": "assistant", "content": action}, True

    def build_generation_prompt(self, messages):
        return messages[-1]["content"]


def policy(observation: str, rng: random.Random) -> str:
    """A random legal move read off the latest board in the observation, in brackets."""
    block = observation.rsplit("Legal actions:", 1)[1]
    moves = [line[2:].split(" — ")[0] for line in block.splitlines() if line.startswith("- ")]
    return "[" + rng.choice([m for m in moves if not re.search(r"\b[A-Z]{2,}\b", m)]) + "]"


async def seat(env: SpiralTwoPlayerEnv, rng: random.Random) -> dict:
    observation, _ = await env.initial_observation()
    moves = []
    while True:
        action = policy(observation, rng) if not env.coordinator.game_done else ""
        result = await env.step(action)
        moves.append(action)
        if result.episode_done:
            return {"moves": moves, "reward": repr(result.reward)}
        observation = result.next_observation


async def main(seed: int) -> dict:
    shared_env = make_env(env_id, use_llm_obs_wrapper=True)
    shared_env.reset(num_players=2, seed=seed)
    shared_env.state.error_allowance = 0
    coordinator = TwoPlayerCoordinator(shared_env=shared_env)
    envs = [SpiralTwoPlayerEnv(player_id=pid, env_id=env_id, coordinator=coordinator, renderer=PassThroughRenderer())
            for pid in (0, 1)]
    seats = await asyncio.gather(*(seat(env, random.Random(seed * 10 + pid)) for pid, env in enumerate(envs)))
    closed = coordinator.rewards
    return {"seats": seats, "illegal_player_id": coordinator.illegal_player_id, "turns": coordinator.turn_count,
            "done": coordinator.state.done, "close_type": type(closed).__name__,
            "rewards": {str(k): v for k, v in closed[0].items()},
            "game_info": {str(k): v for k, v in closed[1].items()}}


print(json.dumps([asyncio.run(main(seed)) for seed in seeds]))
