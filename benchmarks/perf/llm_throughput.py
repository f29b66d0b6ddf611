"""LLM rollout throughput: the batched runner (KV-cache reuse + batched decoding) versus the
naive loop (one prompt, one ``generate`` per decision, the whole prompt re-encoded every turn).

Both play the same games and seeds with the embedded SmolLM2 and greedy decoding, so they
should make the same decisions; the script reports the match rate of the action sequences
(raw reply + parsed action per turn) and the decisions per second of each at 1, 4, 16 and 64
concurrent games.

The naive loop's throughput does not depend on how many games are queued (it plays one
decision at a time), so it is measured on the first ``--naive-games`` games of each size only;
its results are cached by episode id and reused across sizes (same game and seed => same
episode). The match rate is over those games.

    python benchmarks/perf/llm_throughput.py                      # default: a few minutes on 2 cores
    python benchmarks/perf/llm_throughput.py --sizes 1,4 --rounds 1 --naive-games 2   # smoke
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agents import make_policy  # noqa: E402
from agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,4,16,64", help="concurrent games per measurement")
    parser.add_argument("--games", default="prisoners_dilemma,rock_paper_scissors,bargaining")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per game (config)")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--max-retries", type=int, default=0)
    parser.add_argument("--naive-games", type=int, default=3, help="games the naive loop plays per size")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def make_jobs(n: int, games: list, rounds: int, seed: int) -> list:
    return [EpisodeJob(games[i % len(games)], seed + i, ["llm", "llm"], config={"rounds": rounds})
            for i in range(n)]


def actions(record: dict) -> list:
    return [(t["agent"], t["raw"], t["action"]) for t in record["turns"]]


def llm_decisions(records: list) -> int:
    return sum(1 for r in records for t in r["turns"] if "agent_meta" in t)


def main(argv=None) -> list:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    games = [g for g in args.games.split(",") if g]
    options = f"max_new_tokens={args.max_new_tokens}&max_retries={args.max_retries}"
    started = time.perf_counter()
    batched = make_policy(f"smollm2?{options}")
    naive = make_policy(f"smollm2?{options}&mode=naive")
    print(f"model loaded in {time.perf_counter() - started:.1f}s; games={games} rounds={args.rounds} "
          f"max_new_tokens={args.max_new_tokens} greedy")
    # Warm-up (first forward passes are slow), not timed.
    run_jobs(make_jobs(1, games, 1, 10_000), PolicyPool(prebuilt={"llm": batched}))
    naive_cache: dict = {}
    naive_time: dict = {}
    rows = []
    header = f"{'games':>5} {'decisions':>9} {'batched dec/s':>13} {'naive dec/s':>11} {'speed-up':>8} " \
             f"{'match':>11} {'reused tok':>10}"
    print(header)
    for n in sizes:
        jobs = make_jobs(n, games, args.rounds, args.seed)
        reused_before = batched.backend.stats["reused_tokens"]
        prompt_before = batched.backend.stats["prompt_tokens"]
        t0 = time.perf_counter()
        fast = run_jobs(jobs, PolicyPool(prebuilt={"llm": batched}), max_concurrent_episodes=n)
        batched_s = time.perf_counter() - t0
        failed = [r["episode_id"] for r in fast if r.get("failed")]
        if failed:
            raise SystemExit(f"batched episodes failed: {failed}")
        sample = jobs[:max(1, min(n, args.naive_games))]
        for job in sample:
            if job.episode_id not in naive_cache:
                t0 = time.perf_counter()
                naive_cache[job.episode_id] = play_episode(job, PolicyPool(prebuilt={"llm": naive}))
                naive_time[job.episode_id] = time.perf_counter() - t0
        slow = [naive_cache[j.episode_id] for j in sample]
        naive_dps = llm_decisions(slow) / sum(naive_time[j.episode_id] for j in sample)
        batched_dps = llm_decisions(fast) / batched_s
        pairs = [(a, b) for rf, rs in zip(fast, slow) for a, b in zip(actions(rf), actions(rs))]
        matched = sum(a == b for a, b in pairs)
        reuse = (batched.backend.stats["reused_tokens"] - reused_before) / \
            max(1, batched.backend.stats["prompt_tokens"] - prompt_before)
        row = {"games": n, "decisions": llm_decisions(fast), "batched_dps": batched_dps, "naive_dps": naive_dps,
               "speedup": batched_dps / naive_dps, "matched": matched, "compared": len(pairs), "reuse": reuse}
        rows.append(row)
        print(f"{n:>5} {row['decisions']:>9} {batched_dps:>13.2f} {naive_dps:>11.2f} {row['speedup']:>7.2f}x "
              f"{matched:>5}/{len(pairs):<5} {reuse:>9.0%}", flush=True)
    print(f"total {time.perf_counter() - started:.0f}s")
    return rows


if __name__ == "__main__":
    main()
