"""Size a hidden-role self-play run: turns per episode by phase, and how often one side wins, with scripted seats.

    python -m socialgym_benchmarks.selfplay_sizing [--episodes 100] [--policy scripted:heuristic]

For each game of ``GAMES`` (its config and the side a run would train), ``--episodes`` seeded
episodes (seeds 0..n-1) with every seat ``--policy``: the mean number of turns per episode, per
phase (the talk phases are the ones a language model must generate token by token; the others
are scored in one pass), and the side's wins with a 95% Wilson interval (a side that always or
never wins against this opponent leaves a run little to show).
"""
from __future__ import annotations

import argparse
import json
from collections import Counter

import socialgym_env
from socialgym_agents.runner import EpisodeJob, run_jobs

# game -> (config, the side a run trains)
GAMES = {
    "spyfall": ({"rounds": 2}, "spy"),
    "chameleon": ({}, "chameleon"),
    "undercover": ({"rounds": 2}, "undercovers"),
    "werewolves": ({"max_cycles": 2}, "werewolves"),
    "resistance": ({}, "spies"),
}


def size(game: str, config: dict, side: str, episodes: int, policy: str) -> dict:
    from socialgym_benchmarks.elo import wilson_interval
    seats = len(socialgym_env.make(game, **config).possible_agents)
    records = run_jobs([EpisodeJob(game, seed, [policy] * seats, config=dict(config)) for seed in range(episodes)],
                       log_path=None)
    phases = Counter(turn["phase"] for record in records for turn in record["turns"])
    wins = sum(any(s["team"] == side and record["rewards"][s["agent"]] > 0 for s in record["roster"])
               for record in records)
    low, high = wilson_interval(wins, episodes)
    return {"players": seats, "config": config, "side": side,
            "turns_per_episode": round(sum(phases.values()) / episodes, 1),
            "by_phase": {phase: round(n / episodes, 1) for phase, n in sorted(phases.items())},
            "side_wins": wins, "episodes": episodes, "interval": [round(100 * low, 1), round(100 * high, 1)]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--policy", default="scripted:heuristic")
    args = parser.parse_args(argv)
    out = {game: size(game, config, side, args.episodes, args.policy) for game, (config, side) in GAMES.items()}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
