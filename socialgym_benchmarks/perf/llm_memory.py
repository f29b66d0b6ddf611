"""Peak memory of the main job (make demo's tournament) or of a batch of concurrent games, and
what holds it: the weights, the per-seat K/V caches, the decode batches' K/V buffers, the rest
(Python, torch and its libraries, activations, allocator slack).

    python socialgym_benchmarks/perf/llm_memory.py --demo                          # the main job as make demo runs it
    python socialgym_benchmarks/perf/llm_memory.py --games werewolves,coup,chess   # the main job on 3 games
    python socialgym_benchmarks/perf/llm_memory.py --batch 64                      # 64 games at once
    python socialgym_benchmarks/perf/llm_memory.py --batch 2 --rounds 1            # smoke

The main job runs in this process: ``--demo`` runs make demo's tournament command as ``make -n
demo`` prints it (every game, the improvement loop's Liar's Dice roster and its adapter included;
demo_cost.py reads the same line), ``--games`` a subset with ``--agents`` (make demo's roster by
default, ``--preset demo``, no per-game rosters); ``--batch N`` plays N short games (llm_throughput's mix, every seat the model) with the
batched runner, N at once. Peak RSS is the process's ``ru_maxrss`` (what ``/usr/bin/time`` reports: it includes the
moment the weights file is mapped while loading) and the highest RSS sampled while playing,
which the breakdown splits; the caches' figures are
their own peaks over every backend (they need not coincide in time), so they bound what they
held at the peak.
Prints wall time and process CPU time too (CPU time is the figure to compare on a shared machine).
"""
from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

DEMO_AGENTS = "smollm2?dtype=auto&temperature=0.7&context=2048&batch_size=8&template=compact,scripted:heuristic,scripted:random"
MB = 2**20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="werewolves,coup,chess", help="the main job's games")
    parser.add_argument("--agents", default=DEMO_AGENTS, help="the main job's roster (make demo's)")
    parser.add_argument("--demo", action="store_true", help="the main job as make demo runs it (every game)")
    parser.add_argument("--batch", type=int, default=0, help="play N short games at once instead of the main job")
    parser.add_argument("--rounds", type=int, default=2, help="--batch: rounds per game")
    parser.add_argument("--llm", default="smollm2?dtype=auto&temperature=0.7&context=2048",
                        help="--batch: the model policy of every seat")
    args = parser.parse_args(argv)
    if args.batch < 0 or args.rounds < 1:
        parser.error("--batch must be >= 0 and --rounds >= 1")
    return args


def _peak_rss() -> int:
    """Peak resident set of this process in bytes (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def weight_bytes() -> int:
    """Bytes of every model this process holds (base models and merged adapters), each tensor once."""
    from socialgym_agents.llm import adapters, loading
    from socialgym_agents.llm.packed import weight_bytes as held
    return held(*(model for model, _ in list(loading._MODELS.values()) + list(adapters._ADAPTED.values())))


def _rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PlayingPeak(threading.Thread):
    """The highest RSS sampled (every 20 ms) once the first K/V buffer exists: the memory of play,
    without the loading transient (the weights file is mapped while it is read, its pages count)."""

    def __init__(self, live: dict):
        super().__init__(daemon=True)
        self.live, self.peak, self.done = live, 0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.02):
            if self.live["peak_bytes"]:
                self.peak = max(self.peak, _rss())


def play_main_job(out: str, games: str = "", agents: str = DEMO_AGENTS) -> tuple:
    """The main job into ``out``: make demo's tournament line (:func:`_run_demo_command`), or,
    with ``games`` (comma-separated), those games with ``agents`` and ``--preset demo``;
    (episodes logged, failed ones)."""
    if not games:
        return _run_demo_command(out)
    from socialgym_benchmarks.tournament import tournament
    done = tournament([g for g in games.split(",") if g], [a for a in agents.split(",") if a], out=out,
                      preset="demo", progress=False)
    return done.played, done.failed


def _run_demo_command(out: str) -> tuple:
    """make demo's tournament line (demo_cost.demo_commands), run in this process by the
    tournament's typer app; (episodes logged, failed ones)."""
    import shlex

    from socialgym_benchmarks.cli import app
    from socialgym_benchmarks.perf.demo_cost import demo_commands
    from socialgym_benchmarks.tournament.backends import failed_ids, logged_ids
    words = shlex.split(demo_commands(out)[0])
    app(words[words.index("socialgym_env.cli") + 1:], standalone_mode=False)
    logs = Path(out, "logs")
    return len(logged_ids(logs, retry_failed=False)), len(failed_ids(logs))


def run(args) -> dict:
    # torch is imported before the baseline is read: its memory is part of "the rest"
    importlib.import_module("torch")

    from socialgym_agents.llm import kv_cache, loading
    from socialgym_agents.llm.hf_backend import SEAT_CACHES
    # the counters are process-wide: count what this run adds, not what earlier policies held
    kv_cache.reset_peak()
    seat_caches_before = SEAT_CACHES["peak_bytes"] = SEAT_CACHES["bytes"]
    baseline = _rss()
    sampler = _PlayingPeak(kv_cache.LIVE)
    sampler.start()
    wall, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as out:
        if args.batch:
            from socialgym_agents import make_policy
            from socialgym_agents.runner import PolicyPool, run_jobs
            from socialgym_benchmarks.perf.llm_throughput import make_jobs
            policy = make_policy(args.llm)
            jobs = make_jobs(args.batch, ["prisoners_dilemma", "rock_paper_scissors", "bargaining", "public_goods"],
                             args.rounds, 0)
            records = run_jobs(jobs, PolicyPool(prebuilt={"llm": policy}), max_concurrent_episodes=args.batch)
            played, failed = len(records), sum(1 for r in records if r.get("failed"))
            what = f"{args.batch} games at once ({args.llm})"
        else:
            played, failed = play_main_job(out, "" if args.demo else args.games, args.agents)
            what = "the main job as make demo runs it" if args.demo else \
                f"the main job (--preset demo) on {','.join(g for g in args.games.split(',') if g)}"
    sampler.done.set()
    sampler.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    result = {"what": what, "wall_s": wall, "cpu_s": cpu, "episodes": played, "failed": failed,
              # the kernel's high-water mark can lag the last sample
              "peak_rss": max(_peak_rss(), sampler.peak), "playing_peak_rss": sampler.peak,
              "baseline_rss": baseline, "weights": weight_bytes(),
              "seat_caches": SEAT_CACHES["peak_bytes"] - seat_caches_before,
              "batch_kv": kv_cache.LIVE["peak_bytes"]}
    rest = result["playing_peak_rss"] - sum(result[k] for k in ("baseline_rss", "weights", "seat_caches", "batch_kv"))
    print(f"{what}: {result['episodes']} episodes ({result['failed']} failed), wall {result['wall_s']:.0f} s, "
          f"CPU {result['cpu_s']:.0f} s")
    print(f"peak RSS (ru_maxrss)              {result['peak_rss'] / MB:7.0f} MB  (loading included)")
    print(f"peak RSS while playing (sampled)  {result['playing_peak_rss'] / MB:7.0f} MB, of which at most:")
    print(f"  Python + torch + libraries      {baseline / MB:7.0f} MB  (RSS before the run)")
    print(f"  weights                         {result['weights'] / MB:7.0f} MB")
    print(f"  per-seat K/V caches (peak)      {result['seat_caches'] / MB:7.0f} MB")
    print(f"  decode batches' K/V (peak)      {result['batch_kv'] / MB:7.0f} MB")
    print(f"  the rest (activations, slack)   {rest / MB:7.0f} MB")
    # what bounds the kernels oneDNN and ideep keep (socialgym_agents.llm.loading sets both on a CPU without AMX)
    result["kernel_caches"] = {name: os.environ.get(name, "library default") for name in loading.KERNEL_CACHE_VARIABLES}
    print("kernel caches: " + ", ".join(f"{name}={value}" for name, value in result["kernel_caches"].items()))
    return result


def main(argv=None) -> dict:
    return run(parse_args(argv))


if __name__ == "__main__":
    main()
