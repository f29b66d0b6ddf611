"""Memory of a batch of live envs: RSS per env for N envs of one game played to a given step.

    python socialgym_benchmarks/perf/env_memory.py [--game triadic_werewolf] [--envs 64] [--steps 200] [--reps 3]

Each repetition runs in a fresh process (so freed memory of one does not hide in the next):
it creates ``--envs`` envs, resets them with seeds 0..N-1 and plays each with random legal
actions for up to ``--steps`` steps (observations logged: the heaviest setting), keeping every env
alive; it reports the process's resident set size before and after, and the difference per
env (the episode log, the board, the per-seat transcripts and the cached views). Median and
range over repetitions.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os
    return pages * os.sysconf("SC_PAGE_SIZE")


def play_batch(game: str, envs: int, steps: int) -> dict:
    """RSS before and after keeping ``envs`` envs alive at up to ``steps`` steps each."""
    sys.path.insert(0, str(ROOT))
    import socialgym_env
    warm = socialgym_env.make(game)                      # imports and first-use costs out
    warm.reset(seed=10_000)
    before = rss_bytes()
    batch = []
    played = 0
    for seed in range(envs):
        env = socialgym_env.make(game, log_observations=True)   # the heaviest setting
        env.reset(seed=seed)
        rng = random.Random(seed)
        for _ in range(steps):
            if not env.agents:
                break
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            env.last()
            env.step(env.grammar(agent).sample(rng).text)
            played += 1
        batch.append(env)
    after = rss_bytes()
    return {"before": before, "after": after, "per_env": (after - before) / envs, "steps": played}


def measure(game: str, envs: int, steps: int) -> dict:
    """One repetition in a fresh interpreter."""
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); "
            f"from socialgym_benchmarks.perf.env_memory import play_batch; "
            f"print(json.dumps(play_batch({game!r}, {envs}, {steps})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="triadic_werewolf")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    runs = [measure(args.game, args.envs, args.steps) for _ in range(args.reps)]
    per_env = [r["per_env"] / 2**20 for r in runs]
    total = [(r["after"] - r["before"]) / 2**20 for r in runs]
    print(f"{args.game}: {args.envs} live envs, up to {args.steps} steps each "
          f"({statistics.median(r['steps'] for r in runs) / args.envs:.0f} on average), {args.reps} fresh processes")
    print(f"RSS growth {statistics.median(total):.1f} MiB [{min(total):.1f}-{max(total):.1f}], "
          f"per env {statistics.median(per_env):.2f} MiB [{min(per_env):.2f}-{max(per_env):.2f}]")
    return runs


if __name__ == "__main__":
    main()
