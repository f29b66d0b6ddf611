"""LLM rollout throughput of the embedded SmolLM2, four ways, on the same games and seeds:

- ``naive``: the sequential loop, one prompt and one ``generate`` per decision, the whole prompt
  re-encoded every turn, free generation (``mode=naive&constrained=0``);
- ``batched``: the batched runner (per-seat KV-cache reuse, one padded forward pass per tick),
  free generation (``constrained=0``);
- ``constrained``: the batched runner with constrained decoding (the default);
- ``score``: the scoring mode (``mode=score``): finite legal lists ranked by log-probability in
  one forward pass, no generation;
- ``bf16``: ``constrained`` with weights and KV caches in bfloat16 (``dtype=bfloat16``; pays on
  CPUs with AVX512-BF16 or AMX; on a CPU without AMX its Linear weights are packed once for
  oneDNN, socialgym_agents.llm.packed, and so are bf16-sdpa's and score-bf16's);
- ``score-bf16``: ``score`` in bfloat16;
- ``int8``: ``constrained`` with int8 Linear layers and the rest in float32 (``dtype=int8``,
  socialgym_agents.llm.int8; CPU only);
- ``score-int8``: ``score`` with ``dtype=int8``;
- ``bf16-sdpa``: ``bf16`` with its decode steps' attention through PyTorch's SDPA in bfloat16, as
  before the runner's float32 grouped decode attention (socialgym_agents.llm.loading.grouped_decode_attention);
- ``naive-guided``: the naive loop under the grammar (``mode=naive``), the baseline of
  ``constrained`` on a CPU runtime;
- ``openvino``, ``onnxruntime``: ``constrained`` through that CPU runtime (``runtime=``), beside
  PyTorch's modes in one run (``--modes constrained,bf16,openvino``: which serves a CPU best).

``--runtime openvino`` (or ``onnxruntime``) plays every mode through that CPU runtime
(``runtime=`` in the spec, socialgym_agents.llm.runtime_backend); there ``naive-guided`` is one
decision at a time, every prompt encoded whole and every reply token a pass of its own, and the
``vs naive`` column is each mode against it (issue 62's target: ``constrained`` >= 10x).
``--main-job`` plays games in the demo preset's configs instead of ``--rounds`` (by default the
main job's games that socialgym_benchmarks/perf/cpu_runtimes.py records).
The host's CPU and flags are printed first.

Beside bfloat16: each mode played beside its bfloat16 counterpart (``score-bf16`` for the scoring
modes, ``bf16`` for the others) gets a column ``same as bf16``: of the LLM decisions both took at
the same point of the same episode (same job, seed and repetition, and every earlier action of
every seat identical, so the same history), the share where the two chose the same action (the
parsed action, not the reply text); once two episodes part, their later decisions are not
compared. ``same episodes`` counts the episodes whose whole action lists are identical.

Repetitions are interleaved (naive, batched, constrained, score, naive, batched, ...) so that a
change of machine load hits every mode alike; the table gives the median and the range over
repetitions. The naive loop plays one decision at a time, so its decisions/s does not depend on
how many games are queued: it plays only the first ``--naive-games`` games of each repetition.
All modes decode greedily with ``max_retries=0`` (one attempt per decision), so "legal on the
first try" is the share of decisions whose first reply was a legal action.

    python socialgym_benchmarks/perf/llm_throughput.py                                # 16 and 64 games
    python socialgym_benchmarks/perf/llm_throughput.py --sizes 4 --reps 2 --naive-games 1   # smoke
    python socialgym_benchmarks/perf/llm_throughput.py --modes bf16,int8,score-bf16,score-int8   # int8 beside bf16
    python socialgym_benchmarks/perf/llm_throughput.py --modes naive,bf16,bf16-sdpa,int8   # decode attention
    python socialgym_benchmarks/perf/llm_throughput.py --runtime openvino --main-job --modes naive-guided,constrained,score
    python socialgym_benchmarks/perf/llm_throughput.py --main-job --modes constrained,bf16,openvino,onnxruntime
    python socialgym_benchmarks/perf/llm_throughput.py --main-job --modes constrained,openvino,onnxruntime --emulate-avx2
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_agents import make_policy  # noqa: E402
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs  # noqa: E402

MODES = {"naive": "mode=naive&constrained=0", "batched": "constrained=0", "constrained": "", "score": "mode=score",
         "bf16": "dtype=bfloat16", "score-bf16": "mode=score&dtype=bfloat16",
         "int8": "dtype=int8", "score-int8": "mode=score&dtype=int8", "bf16-sdpa": "dtype=bfloat16",
         "naive-guided": "mode=naive", "openvino": "runtime=openvino", "onnxruntime": "runtime=onnxruntime"}
DEFAULT_GAMES = "prisoners_dilemma,rock_paper_scissors,bargaining,public_goods"
NAIVE_MODES = ("naive", "naive-guided")     # one decision at a time: they play --naive-games games
SDPA_DECODE_MODES = {"bf16-sdpa"}      # played with loading.GROUPED_DECODE off (it is off on AMX anyway)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16,64", help="concurrent games per measurement")
    parser.add_argument("--games", default=None, help="default: prisoners_dilemma,rock_paper_scissors,bargaining,"
                        "public_goods (with --main-job: the main job's)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per game (config)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions per size")
    parser.add_argument("--naive-games", type=int, default=2, help="games the naive loop plays per repetition")
    parser.add_argument("--modes", default="naive,batched,constrained,score")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runtime", default="torch", help="the runtime= of every mode (torch, openvino, onnxruntime)")
    parser.add_argument("--main-job", action="store_true", help="the main job's games and demo configs (see above)")
    parser.add_argument("--emulate-avx2", action="store_true",
                        help="run as an AVX2-only CPU would (CPUID masked: socialgym_benchmarks/perf/isa.py)")
    parser.add_argument("--options", default="", help="spec options every mode adds, e.g. the demo's "
                        "template=compact&batch_size=8&context=2048")
    return parser.parse_args(argv)


def make_jobs(n: int, games: list, rounds: int, seed: int, main_job: bool = False) -> list:
    import socialgym_env
    from socialgym_benchmarks.tournament.plan import demo_config
    jobs = []
    for i in range(n):
        game = games[i % len(games)]
        config = demo_config(game) if main_job else {"rounds": rounds}
        seats = len(socialgym_env.make(game, **config).possible_agents)
        jobs.append(EpisodeJob(game, seed + i, ["llm"] * seats, config=config))
    return jobs


def decision_stats(records: list) -> dict:
    turns = [t for r in records for t in r["turns"] if "agent_meta" in t]
    first = [t["agent_meta"]["attempts"][0] for t in turns]
    return {"decisions": len(turns),
            "first_try": sum(1 for a in first if "action" in a),
            "new_tokens": sum((a.get("usage") or {}).get("new_tokens") or 0 for a in first)}


def bf16_reference(mode: str) -> str:
    """The mode a mode's decisions are compared with: its bfloat16 counterpart."""
    return "score-bf16" if mode.startswith("score") else "bf16"


def same_decisions(records: list, reference: list) -> dict:
    """Decisions of ``records`` identical to those of ``reference`` (the same jobs, in order; the
    shorter list bounds the pairs): compared turn by turn while every earlier action of the
    episode was identical (the same history), see the module docstring."""
    compared = same = same_episodes = 0
    for ours, theirs in zip(records, reference):
        identical = len(ours["turns"]) == len(theirs["turns"])
        for mine, other in zip(ours["turns"], theirs["turns"]):
            if "agent_meta" in mine and "agent_meta" in other:
                compared += 1
                same += mine["action"] == other["action"]
            if (mine["agent"], mine["action"]) != (other["agent"], other["action"]):
                identical = False
                break
        same_episodes += identical
    return {"compared": compared, "same": same, "same_episodes": same_episodes,
            "episodes": min(len(records), len(reference))}


def run_mode(mode: str, policy, jobs: list, naive_games: int) -> dict:
    from socialgym_agents.llm import loading
    stats = policy.backend.stats
    before = dict(stats)
    default = loading.GROUPED_DECODE          # off on a CPU with AMX, where bf16 and bf16-sdpa are alike
    loading.GROUPED_DECODE = default and mode not in SDPA_DECODE_MODES
    started = time.perf_counter()
    try:
        if mode in NAIVE_MODES:
            records = [play_episode(job, PolicyPool(prebuilt={"llm": policy})) for job in jobs[:naive_games]]
        else:
            records = run_jobs(jobs, PolicyPool(prebuilt={"llm": policy}), max_concurrent_episodes=len(jobs))
    finally:
        loading.GROUPED_DECODE = default
    seconds = time.perf_counter() - started
    failed = [r["episode_id"] for r in records if r.get("failed")]
    if failed:
        raise SystemExit(f"{mode}: episodes failed: {failed}: {records[0].get('error')}")
    out = decision_stats(records)
    out["records"] = records
    out["seconds"] = seconds
    out["prompt_tokens"] = stats["prompt_tokens"] - before["prompt_tokens"]
    out["reused_tokens"] = stats["reused_tokens"] - before["reused_tokens"]
    return out


def summarize(runs: list) -> dict:
    rates = [r["decisions"] / r["seconds"] for r in runs]
    decisions = sum(r["decisions"] for r in runs)
    return {"dps": statistics.median(rates), "lo": min(rates), "hi": max(rates), "rates": rates,
            "first_try": sum(r["first_try"] for r in runs) / max(1, decisions),
            "new_tokens": sum(r["new_tokens"] for r in runs) / max(1, decisions),
            "reused": sum(r["reused_tokens"] for r in runs) / max(1, sum(r["prompt_tokens"] for r in runs)),
            "decisions": decisions}


def agreement(runs: dict) -> dict:
    """Per mode whose bfloat16 counterpart was run (and is not itself): :func:`same_decisions`
    summed over the repetitions (each repetition's records against that repetition's)."""
    out = {}
    for mode, mine in runs.items():
        reference = runs.get(bf16_reference(mode))
        if reference is None or mode == bf16_reference(mode):
            continue
        pairs = [same_decisions(a["records"], b["records"]) for a, b in zip(mine, reference)]
        out[mode] = {key: sum(p[key] for p in pairs) for key in pairs[0]}
    return out


def print_table(rows: dict, runs: dict) -> None:
    """One line per mode of one size (``rows``: its summaries, given each mode's speed-up over the
    naive loop and its agreement with bfloat16 here; ``runs``: its repetitions)."""
    same = agreement(runs)
    naive = next((runs[m] for m in NAIVE_MODES if m in runs), None)
    print(f"{'mode':<12} {'dec/s median [range]':>24} {'vs naive':>22} {'legal 1st try':>13} "
          f"{'new tok/dec':>11} {'reused tok':>10} {'same as bf16':>18} {'same episodes':>13}")
    for mode, row in rows.items():
        ratio = ""
        if naive and mode not in NAIVE_MODES:
            per_rep = [(r["decisions"] / r["seconds"]) / (q["decisions"] / q["seconds"])
                       for r, q in zip(runs[mode], naive)]
            ratio = f"{statistics.median(per_rep):.2f}x [{min(per_rep):.2f}-{max(per_rep):.2f}]"
            row["speedup"] = statistics.median(per_rep)
        shares = ""
        if mode in same:
            agree = row["same_as_bf16"] = same[mode]
            shares = (f"{agree['same'] / max(1, agree['compared']):>8.0%} of {agree['compared']:<6} "
                      f"{agree['same_episodes']:>6}/{agree['episodes']:<6}")
        print(f"{mode:<12} {row['dps']:>9.2f} [{row['lo']:.2f}-{row['hi']:.2f}]{'':>3} {ratio:>22} "
              f"{row['first_try']:>12.0%} {row['new_tokens']:>11.1f} {row['reused']:>9.0%} {shares}", flush=True)


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.emulate_avx2:
        from socialgym_benchmarks.perf.isa import rerun_as_avx2
        rerun_as_avx2(__file__, argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    from socialgym_benchmarks.perf.cpu_runtimes import GAMES as MAIN_JOB_GAMES
    from socialgym_benchmarks.perf.cpu_runtimes import host_line
    games = args.games or (MAIN_JOB_GAMES if args.main_job else DEFAULT_GAMES)
    games = [g for g in games.split(",") if g]
    modes = [m for m in args.modes.split(",") if m]
    base = f"max_new_tokens={args.max_new_tokens}&max_retries=0" + \
        (f"&runtime={args.runtime}" if args.runtime != "torch" else "") + (f"&{args.options}" if args.options else "")
    from socialgym_benchmarks.perf.isa import emulation_line
    print(host_line())
    print(emulation_line())
    started = time.perf_counter()
    policies = {m: make_policy(f"smollm2?{base}" + (f"&{MODES[m]}" if MODES[m] else "")) for m in modes}
    print(f"model loaded in {time.perf_counter() - started:.1f}s; runtime={args.runtime} games={games} "
          f"{'demo configs' if args.main_job else f'rounds={args.rounds}'} "
          f"max_new_tokens={args.max_new_tokens} greedy, max_retries=0, {args.reps} interleaved repetitions")
    for policy in policies.values():     # warm-up (first passes are slow; builds the vocabulary trie)
        run_jobs(make_jobs(1, ["prisoners_dilemma"], 1, 10_000), PolicyPool(prebuilt={"llm": policy}))
    results: dict = {}
    for n in sizes:
        jobs = make_jobs(n, games, args.rounds, args.seed, args.main_job)
        runs: dict = {m: [] for m in modes}
        for rep in range(args.reps):
            for mode in modes:
                runs[mode].append(run_mode(mode, policies[mode], jobs, args.naive_games))
            print(f"  {n} games, repetition {rep + 1}/{args.reps} done ({time.perf_counter() - started:.0f}s)",
                  flush=True)
        results[n] = {m: summarize(r) for m, r in runs.items()}
        print(f"\n{n} concurrent games (naive: first {min(n, args.naive_games)} games)")
        print_table(results[n], runs)
    print(f"total {time.perf_counter() - started:.0f}s")
    return results


if __name__ == "__main__":
    main()
