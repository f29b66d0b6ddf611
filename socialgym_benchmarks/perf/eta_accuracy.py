"""How true the tournament bar's ETA is: the ETA it showed at each point of a run against the time
the run then took (issue 45 item 5).

    python socialgym_benchmarks/perf/eta_accuracy.py --record runs/eta/stream.jsonl   # make demo's main job
    python socialgym_benchmarks/perf/eta_accuracy.py --stream runs/eta/stream.jsonl   # score it again
    python socialgym_benchmarks/perf/eta_accuracy.py --record S -- --games coup --agents smollm2,scripted:random

``--record`` runs make demo's tournament line (``demo_cost.demo_commands``, so it cannot drift from
the Makefile) or the tournament arguments after ``--``, in this process, and writes what the bar's
:class:`~socialgym_benchmarks.tournament.progress.ProgressEstimate` was given -- the plan, the prior lengths,
every tick and every finished episode, each with its clock time -- to a JSON-lines stream.
``--stream`` (or the end of ``--record``) feeds that stream to a fresh estimate on a simulated
clock and prints, at every twentieth of the run from its first tick to its last episode (or every
1/N with ``--points N``), the status line's ETA beside the time that was really left, then how
much of the run had an ETA and how far off it was. ``--no-prior`` also scores the same stream as if no prior lengths had been given (the bar
then says "ETA once a <game> episode ends" until an episode of every game has ended). Scoring runs the estimator code of the checkout it runs
in, so one recorded stream compares two versions of the estimator side by side.
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import sys
import time
from pathlib import Path

POINTS = 20                # the run is scored at each 1/POINTS of its length
WITHIN = (0.25, 0.5)       # an ETA within this share of the time really left counts as close


def record(stream: Path, tournament_args: list) -> None:
    """Run a tournament with its bar's estimate wrapped so that every call it gets is written
    to ``stream`` with its clock time."""
    from socialgym_benchmarks.tournament import backends
    from socialgym_benchmarks.cli import app
    from socialgym_benchmarks.tournament.progress import ProgressEstimate

    stream.parent.mkdir(parents=True, exist_ok=True)
    sink = stream.open("w")

    def write(event: dict) -> None:
        sink.write(json.dumps(event) + "\n")
        sink.flush()

    class Recorded(ProgressEstimate):
        def __init__(self, planned, clock=time.monotonic, prior_turns=None):
            super().__init__(planned, clock=clock, prior_turns=prior_turns)
            write({"t": clock(), "planned": {k: list(v) for k, v in planned.items()},
                   "prior_turns": prior_turns or {}})

        def tick(self, live, decisions):
            write({"t": self.clock(), "tick": [list(entry) for entry in live], "decisions": decisions})
            super().tick(live, decisions)

        def finished(self, game, turns, episode_id=None):
            write({"t": self.clock(), "finished": [game, turns, episode_id]})
            super().finished(game, turns, episode_id)

    backends.ProgressEstimate = Recorded
    try:
        app(tournament_args, standalone_mode=False)
    finally:
        backends.ProgressEstimate = ProgressEstimate
        sink.close()


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def score(stream: Path, use_prior: bool = True, points: int = POINTS) -> dict:
    """Replay ``stream`` into a fresh estimate and compare its ETA with the time really left at
    each 1/``points`` of the run."""
    from socialgym_benchmarks.tournament.progress import ProgressEstimate
    head, events = _read_stream(stream)
    start, end = next(e["t"] for e in events if "tick" in e), events[-1]["t"]
    clock = _Clock()
    estimate = ProgressEstimate({k: tuple(v) for k, v in head["planned"].items()}, clock=clock,
                                prior_turns=head["prior_turns"] if use_prior else None)
    rows = _replay(events, estimate, clock, start, end, points)
    shown = [(left, eta) for _, left, eta, _ in rows if eta is not None]
    errors = [abs(math.log(eta / left)) for left, eta in shown if eta > 0 and left > 0]
    return {"run_s": end - start, "rows": rows, "shown": len(shown), "points": len(rows),
            "within": {share: sum(abs(eta - left) <= share * left for left, eta in shown) for share in WITHIN},
            "median_factor": math.exp(statistics.median(errors)) if errors else None,
            "worst_factor": math.exp(max(errors)) if errors else None}


def _read_stream(stream: Path) -> tuple:
    """The stream's head (what the estimate was made with) and its events; SystemExit when it
    holds none or no tick."""
    events = [json.loads(line) for line in stream.read_text().splitlines() if line.strip()]
    if not events:
        raise SystemExit(f"{stream}: empty (the run had no ETA to record: its bar off, or played on "
                         "a worker pool, whose bar gives none: --workers 1)")
    head, events = events[0], events[1:]
    if not any("tick" in e for e in events):
        raise SystemExit(f"{stream}: no tick recorded (was the bar on?)")
    return head, events


def _replay(events: list, estimate, clock: "_Clock", start: float, end: float, points: int) -> list:
    """(elapsed, really left, ETA, status line) at each 1/``points`` of the run, the events fed
    to ``estimate`` on ``clock`` in their order."""
    marks = [start + (end - start) * k / points for k in range(1, points)]
    rows, index = [], 0
    for event in events:
        # the status line as it read just before this event, at each mark passed meanwhile
        while index < len(marks) and marks[index] <= event["t"]:
            clock.now = marks[index]
            rows.append((marks[index] - start, end - marks[index], estimate.eta(), estimate.status()))
            index += 1
        clock.now = event["t"]
        if "tick" in event:
            estimate.tick([tuple(entry) for entry in event["tick"]], event["decisions"])
        else:
            estimate.finished(*event["finished"])
    return rows


def report(result: dict, label: str) -> None:
    from socialgym_benchmarks.tournament.progress import duration
    print(f"\n{label}: the run played for {duration(result['run_s'])} after its first tick")
    print(f"{'elapsed':>12} {'really left':>12} {'ETA shown':>12}  status line")
    for elapsed, left, eta, status in result["rows"]:
        print(f"{duration(elapsed):>12} {duration(left):>12} {duration(eta) if eta is not None else '-':>12}  {status}")
    points, shown = result["points"], result["shown"]
    print(f"an ETA at {shown} of {points} points;", ", ".join(
        f"within ±{share:.0%} of the time left at {count}" for share, count in result["within"].items()))
    if result["median_factor"] is not None:
        print(f"off by a factor of {result['median_factor']:.2f} at the median point, {result['worst_factor']:.2f} at worst")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", type=Path, help="run the tournament and write its bar's stream here")
    parser.add_argument("--stream", type=Path, help="score a recorded stream")
    parser.add_argument("--out", default="runs/eta_accuracy", help="the tournament's --out when --record runs make demo's line")
    parser.add_argument("--no-prior", action="store_true", help="also score the stream without its prior lengths")
    parser.add_argument("--points", type=int, default=POINTS, help="score the ETA at each 1/POINTS of the run")
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else None
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if bool(args.record) == bool(args.stream):
        parser.error("give one of --record or --stream")
    stream = args.record or args.stream
    if args.record:
        if extra is None:
            from socialgym_benchmarks.perf.demo_cost import demo_commands
            words = shlex.split(demo_commands(args.out)[0])
            extra = words[words.index("socialgym_env.cli") + 1:]
        record(stream, extra)
    elif not stream.is_file():
        parser.error(f"{stream}: no such stream")
    report(score(stream, points=args.points), "with the prior lengths")
    if args.no_prior:
        report(score(stream, use_prior=False, points=args.points), "without them")


if __name__ == "__main__":
    main()
