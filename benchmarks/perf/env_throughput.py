"""Env throughput: episodes/s and steps/s per game with random legal actions.

    python benchmarks/perf/env_throughput.py [--episodes 20] [--games a,b]

Prints one row per game. The engine's own cost (parsing, visibility filtering, observation
rendering) dominates; the ``obs`` column re-runs with observation rendering on every step
(what an LLM runner pays) to show its share.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import socialgym_env  # noqa: E402


def run(game_id: str, episodes: int, observe: bool) -> tuple[float, int]:
    steps = 0
    start = time.perf_counter()
    for seed in range(episodes):
        env = socialgym_env.make(game_id, log_observations=observe)
        env.reset(seed=seed)
        rng = random.Random(seed)
        for agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last(observe=observe)
            if terminated or truncated:
                env.step(None)
                continue
            env.step(env.grammar(agent).sample(rng).text)
            steps += 1
    return time.perf_counter() - start, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--games", default=",".join(socialgym_env.game_ids()))
    args = parser.parse_args()
    print(f"{'game':24s} {'episodes/s':>11s} {'steps/s':>10s} {'steps/ep':>9s} {'steps/s+obs':>12s} {'obs cost':>9s}")
    for game_id in args.games.split(","):
        bare_time, steps = run(game_id, args.episodes, observe=False)
        obs_time, _ = run(game_id, args.episodes, observe=True)
        print(f"{game_id:24s} {args.episodes / bare_time:11.1f} {steps / bare_time:10.0f} "
              f"{steps / args.episodes:9.1f} {steps / obs_time:12.0f} {obs_time / bare_time:8.2f}x")


if __name__ == "__main__":
    main()
