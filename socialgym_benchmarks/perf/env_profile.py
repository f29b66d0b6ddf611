"""Where an engine step's time goes: the share of each part of the code in random-legal play.

    python socialgym_benchmarks/perf/env_profile.py [--games prisoners_dilemma,werewolves] [--mode render] [--episodes 200]

Plays the same loop as ``env_vs_textarena.py`` (``--mode render``: observation text every step
and logged; ``bare``: none; ``index``: integer actions; ``reset``: make + reset only, 20 times
``--episodes``) under cProfile and splits the total
time by where the running code lives -- each function's own time, and the time of a C builtin
(``str.join``, ``dict.get``, ...) given to the part that called it -- so the shares add up to
100%:

  game        the game's module, the shared rule helpers and the Game base class (repeated.py,
              patterns.py, state.py, game.py, names.py):
              its hooks (grammar, resolve, on_action, text hooks, public_data)
  machine     the turn machine (machine.py)
  views       observation text, infos, grammar caching (views.py, lazy.py)
  grammar     action specs, parsing, look-up, sampling (actions/)
  env + AEC   SocialGymEnv and PettingZoo's AECEnv bookkeeping (env.py, aec.py, pettingzoo)
  loop + RNG  the benchmark's loop (env_vs_textarena.play_random) and the random module: the
              agents' draws, and the engine's seeding and dealing at reset
  other       anything else (record.py, gymnasium, ...)

Times are this process's CPU times. cProfile slows every Python call down by a roughly constant
amount, so the shares lean towards parts that make many small calls; they say where a step's
work is, not how fast it runs (``env_vs_textarena.py`` measures that).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("game", "machine", "views", "grammar", "env + AEC", "loop + RNG", "other")
GAME_HELPERS = ("repeated.py", "patterns.py", "state.py", "game.py", "names.py")


def play(game: str, mode: str, episodes: int) -> int:
    """The benchmark's loop: ``episodes`` seeded episodes of random legal play; the steps."""
    import socialgym_env
    from socialgym_benchmarks.perf.env_vs_textarena import play_random
    steps = 0
    for seed in range(20 * episodes if mode == "reset" else episodes):
        env = socialgym_env.make(game, log_observations=mode == "render")
        env.reset(seed=seed)
        if mode != "reset":
            steps += play_random(env, random.Random(seed), mode)
    return steps


def part_of(filename: str) -> str:
    path = filename.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    if "/socialgym_env/games/" in path or ("/socialgym_env/" in path and name in GAME_HELPERS):
        return "game"
    if path.endswith("socialgym_env/machine.py"):
        return "machine"
    if path.endswith(("socialgym_env/views.py", "socialgym_env/lazy.py")):
        return "views"
    if "/socialgym_env/actions/" in path:
        return "grammar"
    if path.endswith(("socialgym_env/env.py", "socialgym_env/aec.py")) or "/pettingzoo/" in path:
        return "env + AEC"
    if path.endswith(("env_profile.py", "env_vs_textarena.py", "/random.py")):
        return "loop + RNG"
    return "other"


def shares(stats: pstats.Stats) -> dict:
    """Seconds per part: own time where the function lives; a builtin's split by its callers."""
    seconds = dict.fromkeys(PARTS, 0.0)
    for (filename, _line, _name), (_cc, _nc, own, _cum, callers) in stats.stats.items():
        if filename != "~":
            seconds[part_of(filename)] += own
            continue
        for (caller_file, _l, _n), caller_times in callers.items():     # a C builtin
            seconds[part_of(caller_file)] += caller_times[2]
    return seconds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", default="prisoners_dilemma,stag_hunt,rock_paper_scissors,liars_dice,werewolves")
    parser.add_argument("--mode", default="render", choices=["render", "bare", "index", "reset"])
    parser.add_argument("--episodes", type=int, default=200)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    games = args.games.split(",")
    print(f"share of profiled time by part, mode {args.mode}, {args.episodes} seeded episodes per game")
    print(f"{'game':22s} {'steps':>7s}" + "".join(f" {part.replace(' ', ''):>10s}" for part in PARTS))
    table = {}
    for game in games:
        play(game, args.mode, 3)                 # imports and first-use costs out of the profile
        # CPU time, not wall-clock: on a loaded machine a wait for a core would be charged to
        # whichever function was running.
        profile = cProfile.Profile(time.process_time)
        steps = profile.runcall(play, game, args.mode, args.episodes)
        seconds = shares(pstats.Stats(profile))
        total = sum(seconds.values())
        table[game] = {part: value / total for part, value in seconds.items()}
        print(f"{game:22s} {steps:7d}" + "".join(f" {100 * table[game][part]:9.1f}%" for part in PARTS))
    return table


if __name__ == "__main__":
    main()
