"""Load on the OpenEnv-protocol env server: many concurrent sessions played by scripted clients.

    python socialgym_benchmarks/perf/env_server_load.py [--sessions 256] [--duration 20] [--reps 3] [--game prisoners_dilemma]

Starts ``socialgym serve-env`` in its own process on 127.0.0.1 (a free port), opens
``--sessions`` WebSocket sessions at once from this process (asyncio, the ``websockets``
client, OpenEnv's message format) and keeps every one of them open for the whole run. Each
client plays episodes back to back: ``reset`` with its own seed, then a uniformly random legal
move (seeded per client) until the episode ends, then the next episode. The opponents are the
server's default, the per-game heuristic.

Each repetition runs ``--duration`` seconds with all sessions live and measures, from the
client side, every request's round trip (send to answer, resets and steps alike). Printed per
run: live sessions (the server's own ``/health`` count at mid-run), steps per second (moves
answered per second, over all sessions), p50 and p99 round-trip latency, finished episodes, and
the server process's CPU time (user + system) per request answered, the figure least moved by
other load on the machine; then the median [min-max] over repetitions. Memory is the server process's resident set
(psutil) before any session, with every session open and reset, and after the clients have
closed (the sessions freed: ``/health`` must read 0 again).

Clients and server share this machine's cores, so the figures are a floor for the server alone.
Last, where a session's memory goes: Python's ``tracemalloc`` over ``--alloc_sessions``
sessions built and reset in this process, per session, split into gymnasium's ``Text`` spaces
(``spaces/text.py``) and everything else.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

import httpx
import psutil
from websockets.asyncio.client import connect


@dataclass
class Config:
    sessions: int = 256          # concurrent sessions, all open for the whole run
    duration: float = 20.0       # seconds of play per repetition
    reps: int = 3                # repetitions (the summary is their median [min-max])
    game: str = "prisoners_dilemma"   # default game of the server (every session plays it)
    seed: int = 0                # base of the clients' episode seeds and move draws
    alloc_sessions: int = 20     # sessions built in-process for the tracemalloc split (0: skip)


@dataclass
class Client:
    index: int
    ws: object = None
    latencies: list = field(default_factory=list)
    steps: int = 0
    episodes: int = 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(cfg: Config, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "socialgym_env.cli", "serve-env", "--port", str(port), "--game", cfg.game,
           "--max-sessions", str(cfg.sessions + 8), "--idle-timeout", "600"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).raise_for_status()
            return proc
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with {proc.returncode}")
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not answer /health within 60 s")


async def request(client: Client, message: dict) -> dict:
    start = time.perf_counter()
    await client.ws.send(json.dumps(message))
    reply = json.loads(await client.ws.recv())
    client.latencies.append(time.perf_counter() - start)
    if reply["type"] == "error":
        raise RuntimeError(f"client {client.index}: {reply['data']}")
    return reply["data"]


async def play(client: Client, stop_at: float, rng: random.Random, seed_base: int) -> None:
    while time.perf_counter() < stop_at:
        result = await request(client, {"type": "reset", "data": {"seed": seed_base + client.episodes}})
        while not result["done"] and time.perf_counter() < stop_at:
            legal = result["observation"]["legal_actions"]
            move = rng.choice(legal) if legal else "pass"
            result = await request(client, {"type": "step", "data": {"message": move}})
            client.steps += 1
        client.episodes += int(result["done"])


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


async def run_rep(cfg: Config, clients: list, url: str, rep: int, server: psutil.Process) -> dict:
    cpu_start = cpu_seconds(server)
    for c in clients:
        c.latencies, c.steps, c.episodes = [], 0, 0
    start = time.perf_counter()
    stop_at = start + cfg.duration
    rngs = [random.Random(cfg.seed * 1_000_003 + rep * 10_007 + c.index) for c in clients]
    tasks = [asyncio.create_task(play(c, stop_at, rng, (rep * cfg.sessions + c.index) * 100_000))
             for c, rng in zip(clients, rngs)]
    await asyncio.sleep(cfg.duration / 2)
    async with httpx.AsyncClient() as http:
        live = (await http.get(url + "/health")).json()["active_sessions"]
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    server_cpu = cpu_seconds(server) - cpu_start
    latencies = sorted(x for c in clients for x in c.latencies)
    steps = sum(c.steps for c in clients)
    return {"live": live, "steps_per_s": steps / elapsed, "p50_ms": 1e3 * latencies[len(latencies) // 2],
            "p99_ms": 1e3 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "episodes": sum(c.episodes for c in clients), "requests": len(latencies),
            "cpu_ms": 1e3 * server_cpu / max(len(latencies), 1)}


async def main(cfg: Config) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(cfg, port)
    server = psutil.Process(proc.pid)
    try:
        rss_idle = server.memory_info().rss
        clients = [Client(i) for i in range(cfg.sessions)]
        for c in clients:                      # open every session before any play
            c.ws = await connect(url.replace("http", "ws") + "/ws", max_size=1 << 22)
        await asyncio.gather(*(request(c, {"type": "reset", "data": {"seed": c.index}}) for c in clients))
        rss_open = server.memory_info().rss
        print(f"server: {cfg.game}, heuristic opponents; {cfg.sessions} WebSocket sessions open and reset; "
              f"{cfg.duration:g} s per repetition")
        print(f"{'rep':>3} {'live':>5} {'steps/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'episodes':>9} {'requests':>9} "
              f"{'server CPU ms/request':>22}")
        runs = []
        for rep in range(cfg.reps):
            r = await run_rep(cfg, clients, url, rep, server)
            runs.append(r)
            print(f"{rep:>3} {r['live']:>5} {r['steps_per_s']:>9.0f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
                  f"{r['episodes']:>9} {r['requests']:>9} {r['cpu_ms']:>22.2f}")
        rss_peak = server.memory_info().rss
        for c in clients:
            await c.ws.close()
        deadline = time.monotonic() + 10
        async with httpx.AsyncClient() as http:
            while (left := (await http.get(url + "/health")).json()["active_sessions"]) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        rss_closed = server.memory_info().rss

        def summary(key, fmt):
            values = [r[key] for r in runs]
            return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"

        print(f"median [min-max] over {cfg.reps}: live sessions {summary('live', '{:.0f}')}, "
              f"steps/s {summary('steps_per_s', '{:.0f}')}, p50 {summary('p50_ms', '{:.1f}')} ms, "
              f"p99 {summary('p99_ms', '{:.1f}')} ms, server CPU {summary('cpu_ms', '{:.2f}')} ms per request")
        mib = 1 / (1 << 20)
        print(f"server RSS: {rss_idle * mib:.0f} MiB idle, {rss_open * mib:.0f} MiB with {cfg.sessions} sessions "
              f"({(rss_open - rss_idle) / cfg.sessions / 1024:.0f} KiB per session), {rss_peak * mib:.0f} MiB after "
              f"play, {rss_closed * mib:.0f} MiB after the clients closed; sessions left open: {left}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def allocation_split(cfg: Config) -> None:
    """Per-session allocations of sessions built in this process, by tracemalloc."""
    import tracemalloc

    from socialgym_agents.serve.game_session import GameDefaults, GameSession

    GameSession(GameDefaults(game=cfg.game)).reset(seed=0)       # imports and caches first
    tracemalloc.start()
    sessions = [GameSession(GameDefaults(game=cfg.game)) for _ in range(cfg.alloc_sessions)]
    for seed, session in enumerate(sessions):
        session.reset(seed=seed)
    stats = tracemalloc.take_snapshot().statistics("filename")
    tracemalloc.stop()
    total = sum(s.size for s in stats) / cfg.alloc_sessions / 1024
    text = sum(s.size for s in stats if s.traceback[0].filename.endswith("spaces/text.py")) / cfg.alloc_sessions / 1024
    print(f"per-session allocations (tracemalloc, {cfg.alloc_sessions} sessions in-process): {total:.0f} KiB, "
          f"of which {text:.0f} KiB gymnasium Text spaces and {total - text:.0f} KiB everything else")


def parse_args() -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Config()).items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    return Config(**vars(parser.parse_args()))


if __name__ == "__main__":
    config = parse_args()
    asyncio.run(main(config))
    if config.alloc_sessions:
        allocation_split(config)
