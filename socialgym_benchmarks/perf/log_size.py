"""Episode-log bytes per episode, for every game, with each turn's observation logged (the old
default, now ``-c log_observations=true``) and without (today's default).

    python socialgym_benchmarks/perf/log_size.py [--games all] [--episodes 20] [--policy scripted:heuristic]

Both columns come from the same seeded episodes (every seat played by ``--policy`` through the
runner, as a tournament does), written as JSONL log lines; the sizes are deterministic, so one
run is the measurement. The last column checks that replaying each lean record rebuilds every
turn's logged observation exactly (``socialgym_env.logs.replay_observations``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import socialgym_env  # noqa: E402
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs  # noqa: E402
from socialgym_env.logs import encode_line, replay_observations  # noqa: E402


def episode_records(game: str, episodes: int, policy: str, log_observations: bool) -> list[dict]:
    seats = [policy] * len(socialgym_env.make(game).possible_agents)
    jobs = [EpisodeJob(game, seed, seats, config={"log_observations": log_observations},
                       episode_id=f"{game}-{seed}") for seed in range(episodes)]
    return run_jobs(jobs, PolicyPool(seed=0))


def measure(game: str, episodes: int, policy: str) -> dict:
    full = episode_records(game, episodes, policy, True)
    lean = episode_records(game, episodes, policy, False)
    rebuilt = all(replay_observations(record) == [turn["observation"] for turn in full_record["turns"]]
                  for record, full_record in zip(lean, full))
    full_bytes = sum(len(encode_line(r)) for r in full) / episodes
    lean_bytes = sum(len(encode_line(r)) for r in lean) / episodes
    return {"game": game, "full": full_bytes, "lean": lean_bytes, "rebuilt": rebuilt}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="all", help="comma-separated game ids, or all")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--policy", default="scripted:heuristic")
    args = parser.parse_args(argv)
    games = socialgym_env.game_ids() if args.games == "all" else args.games.split(",")
    print(f"bytes per episode ({args.episodes} seeded episodes, every seat {args.policy})")
    print(f"{'game':24s} {'observations':>13s} {'default':>10s} {'ratio':>7s}  replay rebuilds them")
    rows = [measure(game, args.episodes, args.policy) for game in games]
    for row in rows:
        print(f"{row['game']:24s} {row['full']:13,.0f} {row['lean']:10,.0f} {row['full'] / row['lean']:6.1f}x  "
              f"{'yes' if row['rebuilt'] else 'NO'}")
    total_full, total_lean = sum(r["full"] for r in rows), sum(r["lean"] for r in rows)
    print(f"{'all games (sum)':24s} {total_full:13,.0f} {total_lean:10,.0f} {total_full / total_lean:6.1f}x")
    return 0 if all(r["rebuilt"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
