"""Decisions/s of the server backend against a scripted server with a fixed per-request latency,
next to the limit that latency and the concurrency allow (``concurrency / latency``).

The server (127.0.0.1, threaded, keep-alive, in a process of its own like any real server)
sleeps ``--latency`` seconds and answers every request with a legal Prisoner's Dilemma action. Two measurements, repetitions interleaved
(``backend``, ``runner``, ``backend``, ...) so a change of machine load hits both alike:

- ``backend``: one ``complete()`` call with ``--decisions`` requests (what one tick of many
  pending decisions sends);
- ``runner``: the batched runner playing Prisoner's Dilemma episodes through an ``openai:``
  spec, ``concurrency / 2`` episodes at once (two simultaneous decisions each per tick), so each
  tick sends one full window; it includes rendering prompts, parsing and stepping the envs.

Each line: median decisions/s [min-max over repetitions], the median share of the limit, and
the CPU time this process spent per decision (``time.process_time``; the server's is not in
it): on a machine whose cores are busy with other work, that CPU, not the latency, bounds the
rate, and ``1 / CPU`` says what one free core would sustain.

    python socialgym_benchmarks/perf/server_throughput.py                        # 200 ms, 64 in flight
    python socialgym_benchmarks/perf/server_throughput.py --concurrency 8        # the former default
    python socialgym_benchmarks/perf/server_throughput.py --reps 2 --decisions 128   # smoke
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_agents.llm.backend import Completion  # noqa: E402
from socialgym_agents.llm.config import parse_options  # noqa: E402
from socialgym_agents.llm.openai_backend import OpenAIBackend  # noqa: E402
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs  # noqa: E402

REPLY = json.dumps({"choices": [{"message": {"role": "assistant",
                                             "content": '{"action_type": "defect", "argument": ""}'},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 12}}).encode()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server waits per request")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight (the spec's concurrency=)")
    parser.add_argument("--decisions", type=int, default=640, help="requests per backend repetition")
    parser.add_argument("--rounds", type=int, default=10, help="Prisoner's Dilemma rounds per runner episode")
    parser.add_argument("--reps", type=int, default=5, help="interleaved repetitions")
    parser.add_argument("--serve", action="store_true", help="(internal) be the scripted server, print its URL")
    return parser.parse_args(argv)


def start_server(latency: float):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"      # keep-alive: connections are reused like a real server's
        disable_nagle_algorithm = True     # TCP_NODELAY, as real servers: no delayed-ACK stall per reply

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(REPLY)))
            self.end_headers()
            self.wfile.write(REPLY)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 512    # the listen backlog: a burst of new connections fits

    httpd = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def backend_rate(backend, n: int) -> tuple:
    """(decisions/s, CPU seconds of this process per decision)."""
    items = [Completion(("bench", f"p{i}"), [{"role": "user", "content": f"decide {i}"}], i) for i in range(n)]
    started, cpu = time.perf_counter(), time.process_time()
    replies = backend.complete(items)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert not any(isinstance(r, BaseException) for r in replies), replies[0]
    return n / elapsed, cpu / n


def runner_rate(spec: str, episodes: int, rounds: int, rep: int) -> tuple:
    jobs = [EpisodeJob("prisoners_dilemma", 1000 * rep + i, [spec, spec], config={"rounds": rounds})
            for i in range(episodes)]
    started, cpu = time.perf_counter(), time.process_time()
    records = run_jobs(jobs, PolicyPool(), max_concurrent_episodes=episodes)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert all(r["finished"] and not r.get("failed") for r in records), records[0].get("error")
    decisions = sum(1 for r in records for t in r["turns"] if t.get("agent_meta"))
    return decisions / elapsed, cpu / decisions


def serve(latency: float) -> None:
    httpd, url = start_server(latency)
    print(url, flush=True)
    sys.stdin.read()            # until the benchmark closes our stdin
    httpd.shutdown()


def main(argv=None):
    args = parse_args(argv)
    if args.serve:
        return serve(args.latency)
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(args.latency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    options = f"concurrency={args.concurrency}&timeout=30&constrained=0"
    spec = f"openai:bench@{url}?{options}"
    backend = OpenAIBackend(f"bench@{url}", parse_options(options))
    limit = args.concurrency / args.latency
    rates = {"backend": [], "runner": []}
    backend_rate(backend, args.concurrency)          # warm-up: connections opened
    for rep in range(args.reps):
        rates["backend"].append(backend_rate(backend, args.decisions))
        rates["runner"].append(runner_rate(spec, max(1, args.concurrency // 2), args.rounds, rep))
    server.stdin.close()
    server.wait(timeout=30)
    print(f"latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}: limit {limit:.0f} decisions/s; "
          f"{args.reps} interleaved repetitions; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, runs in rates.items():
        values = [rate for rate, _ in runs]
        median, cpu = statistics.median(values), statistics.median(c for _, c in runs)
        print(f"{name:8s} {median:7.1f} decisions/s [{min(values):.1f}-{max(values):.1f}]  "
              f"{median / limit:.0%} of the limit; {cpu * 1000:.2f} ms CPU per decision here "
              f"(one free core: {1 / cpu:.0f} decisions/s)")


if __name__ == "__main__":
    main()
