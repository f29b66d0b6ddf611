"""Size a hidden-role self-play run: turns per episode by phase, and how often one side wins, with scripted seats.

    python -m socialgym_benchmarks.studies.selfplay_sizing [--episodes 100] [--policy scripted:heuristic]
        [--side_policy scripted:random]

For each game of ``GAMES`` (its config and the side a run would train), ``--episodes`` seeded
episodes (seeds 0..n-1) with every seat ``--policy``, the trained side's seats ``--side_policy``
if given (``scripted:random``: a stand-in for an untrained model, whose scoring-mode draws at
T = 1 are close to uniform): the mean number of turns per episode, per phase (the talk phases are
the ones a language model must generate token by token, unless ``--talk pass`` silences them;
the others are scored in one pass), the side's own turns per episode, how many of them are talk
turns, and the side's wins with a 95% Wilson interval (a side that always or never wins against
this opponent leaves a run little to show).
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
    "werewolves@3": ({"max_cycles": 3}, "werewolves"),
    "resistance": ({}, "spies"),
}


def size(game: str, config: dict, side: str, episodes: int, policy: str, side_policy: str = "") -> dict:
    from socialgym_benchmarks.ratings import wilson_interval
    env = socialgym_env.make(game, **config)
    jobs = []
    for seed in range(episodes):
        env.reset(seed=seed)
        seats = [side_policy if side_policy and env.state.team(a) == side else policy for a in env.possible_agents]
        jobs.append(EpisodeJob(game, seed, seats, config=dict(config)))
    records = run_jobs(jobs, log_path=None)
    phases = Counter(turn["phase"] for record in records for turn in record["turns"])
    side_turns = Counter(turn["phase"] for record in records for turn in record["turns"]
                         if _team_of(record, turn["agent"]) == side)
    talk = talk_phases(env)
    wins = sum(any(s["team"] == side and record["rewards"][s["agent"]] > 0 for s in record["roster"])
               for record in records)
    low, high = wilson_interval(wins, episodes)
    return {"players": len(env.possible_agents), "config": config, "side": side,
            "side_policy": side_policy or policy,
            "turns_per_episode": round(sum(phases.values()) / episodes, 1),
            "by_phase": {phase: round(n / episodes, 1) for phase, n in sorted(phases.items())},
            "side_turns_per_episode": round(sum(side_turns.values()) / episodes, 1),
            "side_talk_turns_per_episode": round(sum(n for ph, n in side_turns.items() if ph in talk) / episodes, 1),
            "side_wins": wins, "episodes": episodes, "interval": [round(100 * low, 1), round(100 * high, 1)]}


def talk_phases(env) -> set:
    """The game's phases whose only actions are ``say`` and ``pass`` (what ``--talk pass``
    silences): those whose grammar, asked for the first seat after a reset, offers just them."""
    env.reset(seed=0)
    out = set()
    for phase in env.game.phases():
        try:
            names = sorted(spec.type for spec in phase.grammar(env.state, env.possible_agents[0]))
        except Exception:        # a grammar that needs its own phase's state is not a talk turn's
            continue
        if names == ["pass", "say"]:
            out.add(phase.name)
    return out


def _team_of(record: dict, agent: str) -> str:
    return next(s["team"] for s in record["roster"] if s["agent"] == agent)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--policy", default="scripted:heuristic")
    parser.add_argument("--side_policy", default="", help="the trained side's seats (default: --policy)")
    args = parser.parse_args(argv)
    out = {name: size(name.split("@")[0], config, side, args.episodes, args.policy, args.side_policy)
           for name, (config, side) in GAMES.items()}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
