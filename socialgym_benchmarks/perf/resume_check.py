"""Kill a tournament after a few rounds of decisions, resume it, and compare its logs with an
unbroken run's: how exactly a resume continues the episodes in flight with a real policy.

    PYTHONPATH=$PWD python socialgym_benchmarks/perf/resume_check.py --agent "smollm2?temperature=0.7&context=2048"

Prints how many episodes are byte-identical, and for the others the first turn that differs and
which fields differ there (e.g. a model backend's cache statistics in ``usage``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_benchmarks.tournament import backends  # noqa: E402
from socialgym_benchmarks.tournament import parse_overrides, plan_tournament, run_tournament  # noqa: E402


def killing_after(ticks: int):
    """A stand-in for ``tournament.backends._tick_callback`` that interrupts the run (as Ctrl-C
    would) after ``ticks`` rounds of decisions."""
    real = backends._tick_callback

    def make(ep_bar, estimate, every_s=0.5):
        tick, seen = real(ep_bar, estimate, every_s), [0]

        def on_tick(live, decisions):
            tick(live, decisions)
            if live and all(entry[2] == 0 for entry in live):
                return                  # the state before the first decision, not a round
            seen[0] += 1
            if seen[0] == ticks:
                raise KeyboardInterrupt
        return on_tick
    return make


def _records(out: Path) -> dict:
    return {json.loads(line)["episode_id"]: line for path in sorted((out / "logs").glob("*.jsonl"))
            for line in path.read_text().splitlines() if line}


def _paths(a, b, where="") -> list:
    """The paths (``turns[6].agent_meta.attempts[0].usage.reused_tokens``) where ``a`` and ``b`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b)) for p in _paths(a.get(k), b.get(k), f"{where}.{k}" if where else k)]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _paths(x, y, f"{where}[{i}]")]
    return [] if a == b else [where]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="smollm2?temperature=0.7&context=2048")
    parser.add_argument("--games", default="prisoners_dilemma")
    parser.add_argument("-c", "--config", action="append", default=["prisoners_dilemma.rounds=4"])
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--kill-after", type=int, default=3, help="rounds of decisions before the kill")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    games = args.games.split(",")
    jobs = plan_tournament(games, [args.agent, "scripted:random"], args.episodes, args.seed,
                           configs=parse_overrides(args.config))
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        started = time.perf_counter()
        run_tournament(jobs, out / "unbroken", progress=False, leaderboard=False)
        print(f"unbroken run: {len(jobs)} episodes in {time.perf_counter() - started:.0f} s")
        real = backends._tick_callback
        backends._tick_callback = killing_after(args.kill_after)
        try:
            run_tournament(jobs, out / "resumed", progress=False, leaderboard=False)
        except KeyboardInterrupt:
            pass
        finally:
            backends._tick_callback = real
        run_tournament(jobs, out / "resumed", progress=False, leaderboard=False)
        unbroken, resumed = _records(out / "unbroken"), _records(out / "resumed")
        same = [episode for episode in unbroken if resumed.get(episode) == unbroken[episode]]
        print(f"byte-identical episodes: {len(same)} of {len(unbroken)}")
        for episode in sorted(set(unbroken) - set(same)):
            differ = _paths(json.loads(unbroken[episode]), json.loads(resumed.get(episode, "{}")))
            print(f"  {episode}: {len(differ)} fields differ: {', '.join(differ[:6])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
