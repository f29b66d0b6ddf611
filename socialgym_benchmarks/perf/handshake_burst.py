"""A burst of honest WebSocket clients against ``serve-env``'s ``--max-handshakes`` (issue 65).

    python socialgym_benchmarks/perf/handshake_burst.py [--clients 100,192,256] [--reps 3]

Serves the OpenEnv-protocol app on 127.0.0.1 (a free port, in this process, the CLI's default
limits: 64 waiting connections, 10 s, 1,024 sessions) and, per repetition and burst size, opens
that many WebSocket clients at once (asyncio, the ``websockets`` client). Each sends its upgrade
and a ``reset`` at once and waits for the observation: it is served, answered 503 with
Retry-After, or lost (the connection dropped with no answer). Two conditions, interleaved in each
repetition: the burst alone, and the burst after ``--max-handshakes`` stalled connections (half
a request's headers, then nothing) have waited past the stall time. Printed: per condition and
size, the median [min-max] over repetitions of clients served and lost, and of the seconds until
the last client had its answer; and the stalled connections still open after the burst. The
host's CPU model and flags come first: clients and server share its cores.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_agents.serve.app import BackgroundServer  # noqa: E402
from socialgym_agents.serve.limits import ServerLimits  # noqa: E402
from socialgym_agents.serve.openenv_app import create_openenv_app  # noqa: E402


def host() -> str:
    model, flags = "unknown CPU", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = " ".join(f for f in line.split(":", 1)[1].split() if f.startswith(("avx", "amx", "sse4")))
    except OSError:
        pass
    return f"host: {model}; flags: {flags or 'n/a'}"


async def client(url: str) -> str:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus
    try:
        async with connect(url, open_timeout=60) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"game": "prisoners_dilemma", "seed": 1}}))
            reply = json.loads(await asyncio.wait_for(ws.recv(), 60))
            return "served" if reply.get("type") == "observation" else "lost"
    except InvalidStatus as err:
        return "503" if err.response.status_code == 503 and err.response.headers.get("Retry-After") else "lost"
    except Exception:                # noqa: BLE001 -- a dropped connection is what is counted
        return "lost"


def one_burst(url: str, clients: int) -> tuple:
    async def burst():
        return await asyncio.gather(*(client(url.replace("http", "ws", 1) + "/ws") for _ in range(clients)))
    started = time.perf_counter()
    outcomes = Counter(asyncio.run(burst()))
    return outcomes, time.perf_counter() - started


def stalled_connections(url: str, count: int) -> list:
    host_name, port = url.removeprefix("http://").split(":")
    socks = []
    for _ in range(count):
        sock = socket.create_connection((host_name, int(port)), timeout=5)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        socks.append(sock)
    return socks


def still_open(socks: list) -> int:
    open_count = 0
    for sock in socks:
        sock.settimeout(0.01)
        try:
            open_count += sock.recv(1) != b""
        except socket.timeout:
            open_count += 1
        except OSError:
            pass
    return open_count


def spread(values: list) -> str:
    return f"{statistics.median(values):g} [{min(values):g}-{max(values):g}]"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="100,192,256", help="burst sizes, comma-separated")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.clients.split(",")]
    limits = ServerLimits()
    stall_s = getattr(limits, "stall_s", 1.0)        # a checkout before stall_s: 1 s, the stall time since
    print(host())
    results: dict = {}
    with BackgroundServer(create_openenv_app(limits=limits)) as url:
        for _ in range(args.reps):
            for size in sizes:
                for condition in ("alone", "after stalled"):
                    stalled = stalled_connections(url, limits.max_handshakes) if condition != "alone" else []
                    time.sleep(stall_s + 0.2 if stalled else 0)
                    outcomes, seconds = one_burst(url, size)
                    row = results.setdefault((condition, size), {"served": [], "lost": [], "s": [], "open": []})
                    row["served"].append(outcomes["served"] + outcomes["503"])
                    row["lost"].append(outcomes["lost"])
                    row["s"].append(round(seconds, 2))
                    row["open"].append(still_open(stalled))
                    for sock in stalled:
                        sock.close()
    print(f"limits: --max-handshakes {limits.max_handshakes}, --handshake-timeout {limits.handshake_timeout_s:g} s "
          f"(stalled after {stall_s:g} s); median [min-max] of {args.reps} repetitions")
    for (condition, size), row in results.items():
        print(f"{size:4d} clients, {condition:13s}: served {spread(row['served'])}, lost {spread(row['lost'])}, "
              f"{spread(row['s'])} s; stalled still open {spread(row['open'])}")


if __name__ == "__main__":
    main()
