"""Both servers (serve-env, the arena) under hostile clients, live on 127.0.0.1: oversized and
endless bodies, half-sent requests, silent WebSockets, 300 kB ids, wrong field types and deeply
nested frames are each answered or dropped within the limits (socialgym_agents.serve.limits),
while /health keeps answering in under 100 ms."""
import http.client
import json
import socket
import statistics
import threading
import time
from urllib.parse import urlsplit

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx   # noqa: E402
from fastapi.routing import APIRoute   # noqa: E402
from websockets.exceptions import ConnectionClosed   # noqa: E402
from websockets.sync.client import connect   # noqa: E402

from socialgym_agents.serve import app as base, arena, openenv_app   # noqa: E402
from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.arena import create_arena_app   # noqa: E402
from socialgym_agents.serve.limits import ServerLimits   # noqa: E402
from socialgym_agents.serve.openenv_app import create_openenv_app   # noqa: E402

LIMITS = ServerLimits(max_body_bytes=1 << 20, handshake_timeout_s=0.5, max_handshakes=8)
MAX_SESSIONS, IDLE_TIMEOUT_S = 16, 1.0
HUGE_ID = "A" * 300_000
# Per server: the route that starts a game, a body naming a game, and a WebSocket path.
SERVERS = {
    "serve-env": {"start": "/reset", "body": lambda game: {"game": game, "seed": 1}, "ws": "/ws",
                  "router": openenv_app.router},
    "arena": {"start": "/api/games", "body": lambda game: {"game": game, "seats": [], "seed": 1},
              "ws": "/ws/nosuchgame", "router": arena.router},
}


def build(kind, tmp_path_factory):
    if kind == "serve-env":
        return create_openenv_app(max_sessions=MAX_SESSIONS, idle_timeout_s=IDLE_TIMEOUT_S, limits=LIMITS)
    return create_arena_app(tmp_path_factory.mktemp("arena"), max_games=MAX_SESSIONS,
                            idle_timeout_s=IDLE_TIMEOUT_S, limits=LIMITS)


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(request, tmp_path_factory):
    app = build(request.param, tmp_path_factory)
    with BackgroundServer(app) as url:
        yield {"url": url, "app": app, **SERVERS[request.param], "kind": request.param}


def address(url):
    parts = urlsplit(url)
    return parts.hostname, parts.port


def health_latency(url, probes=5) -> float:
    """The median seconds of ``probes`` fresh GET /health (one connection each, as a monitor)."""
    times = []
    for _ in range(probes):
        start = time.perf_counter()
        connection = http.client.HTTPConnection(*address(url), timeout=30)
        connection.request("GET", "/health")
        assert connection.getresponse().status == 200
        connection.close()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def raw_request(url, head: bytes, timeout=5.0) -> socket.socket:
    sock = socket.create_connection(address(url), timeout=timeout)
    sock.sendall(head)
    return sock


def status_of(sock) -> int:
    """The HTTP status the server answered on ``sock`` (0 when it closed without one)."""
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return 0
        data += chunk
    return int(data.split(b" ", 2)[1])


def closed_by_server(sock, within: float) -> bool:
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_every_route_refuses_a_declared_oversized_body_before_reading_it(server):
    """150 MB declared, not a byte of it sent: every HTTP route answers 413 at once."""
    paths = {r.path.replace("{", "").replace("}", ""): sorted(r.methods)
             for r in base.router.routes + server["router"].routes if isinstance(r, APIRoute)}
    assert server["start"] in paths and "/health" in paths
    for path, methods in paths.items():
        for method in methods:
            sock = raw_request(server["url"], f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                               f"application/json\r\nContent-Length: 157286400\r\n\r\n".encode(), timeout=3)
            with sock:
                assert status_of(sock) == 413, (method, path)
    assert health_latency(server["url"]) < 0.1


def test_a_streamed_body_is_cut_off_at_the_limit(server):
    """A chunked body with no length: refused once it passes the limit, not read to its end."""
    sock = raw_request(server["url"], f"POST {server['start']} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       "application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    chunk = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
    sent = 0
    with sock:
        try:
            while sent < 64 << 20:                       # far past the limit; the server stops us first
                sock.sendall(chunk)
                sent += 1 << 16
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert sent < 64 << 20                           # the server hung up long before the end
        sock.settimeout(3)
        assert status_of(sock) == 413


def test_a_body_that_stops_arriving_is_answered_408(server):
    sock = raw_request(server["url"], f"POST {server['start']} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       "application/json\r\nContent-Length: 100\r\n\r\n{\"game\"".encode(), timeout=5)
    with sock:
        assert status_of(sock) == 408


def test_half_sent_requests_are_capped_and_dropped(server):
    """30 connections that never finish their headers: the oldest past the cap are dropped once
    they have stalled (``stall_s``), the rest after the handshake timeout; /health answers fast
    meanwhile."""
    socks = [raw_request(server["url"], f"POST {server['start']} HTTP/1.1\r\nHost: x\r\n".encode())
             for _ in range(30)]
    try:
        assert health_latency(server["url"]) < 0.1
        time.sleep(LIMITS.stall_s)            # past the cap, a connection is shed once it has stalled this long
        early = sum(closed_by_server(s, 0.05) for s in socks)
        assert early >= 30 - LIMITS.max_handshakes
        assert all(closed_by_server(s, 5 * LIMITS.handshake_timeout_s) for s in socks)
    finally:
        for s in socks:
            s.close()


def test_silent_websockets_are_capped_and_closed(server):
    """30 WebSockets that never send a message. The arena (whose first message is a ``hello``
    with a token) holds at most ``max_handshakes`` of them, closing the oldest past that (1013)
    and the rest after the handshake timeout (1008). serve-env has no handshake: a socket is a
    session from its connection, so the session cap refuses the surplus (CAPACITY_REACHED) and
    the idle timeout closes the rest (1001)."""
    sockets = [connect(server["url"].replace("http", "ws", 1) + server["ws"], open_timeout=5) for _ in range(30)]
    codes = []
    try:
        time.sleep(LIMITS.stall_s)           # those past the cap are shed once they have stalled this long
        health = httpx.get(server["url"] + "/health").json()
        assert health["waiting_handshakes"] <= LIMITS.max_handshakes
        assert health["active_sessions"] <= health["max_sessions"] == MAX_SESSIONS
        assert health_latency(server["url"]) < 0.1
        for ws in sockets:
            with pytest.raises(ConnectionClosed):
                while True:                              # serve-env says CAPACITY_REACHED first
                    ws.recv(timeout=5 * max(LIMITS.handshake_timeout_s, IDLE_TIMEOUT_S))
            codes.append(ws.close_code)
    finally:
        for ws in sockets:
            ws.close()
    # Exact counts depend on how fast 30 connections open (an early one may time out before it
    # is evicted); the cap itself is what /health showed above.
    if server["kind"] == "arena":
        assert set(codes) == {1008, 1013}, codes
    else:
        assert set(codes) == {1000, 1001}, codes
    health = httpx.get(server["url"] + "/health").json()
    assert health["waiting_handshakes"] == 0 and health["active_sessions"] == 0


def test_a_300_kb_game_id_is_refused_in_milliseconds(server):
    answers = {}

    def attack():
        start = time.perf_counter()
        reply = httpx.post(server["url"] + server["start"], json=server["body"](HUGE_ID), timeout=60)
        answers["reply"], answers["seconds"] = reply, time.perf_counter() - start

    attacker = threading.Thread(target=attack)
    attacker.start()
    latency = health_latency(server["url"])
    attacker.join(60)
    reply = answers["reply"]
    assert reply.status_code == 400 and answers["seconds"] < 0.5, (reply.status_code, answers["seconds"])
    assert "game must be a string of 1 to 128 characters" in reply.json()["detail"]
    assert len(reply.text) < 400 and latency < 0.1


@pytest.mark.parametrize("field", ["seat", "opponents", "episode_id", "config"])
def test_serve_env_bounds_every_reset_field(tmp_path_factory, field):
    app = build("serve-env", tmp_path_factory)
    values = {"seat": HUGE_ID, "opponents": ["scripted:" + HUGE_ID], "episode_id": HUGE_ID,
              "config": {"rounds": HUGE_ID}}
    with BackgroundServer(app) as url:
        start = time.perf_counter()
        reply = httpx.post(url + "/reset", json={"game": "prisoners_dilemma", field: values[field]}, timeout=60)
        assert reply.status_code == 400 and time.perf_counter() - start < 0.5
        assert len(reply.text) < 400
        assert httpx.get(url + "/health").json()["active_sessions"] == 0


def test_arena_bounds_seat_specs_and_configs(tmp_path_factory):
    with BackgroundServer(build("arena", tmp_path_factory)) as url:
        for body in ({"game": "chicken", "seats": [{"kind": "policy", "spec": "scripted:" + HUGE_ID}] * 2},
                     {"game": "chicken", "config": {"rounds": HUGE_ID}, "seats": []}):
            reply = httpx.post(url + "/api/games", json=body, timeout=60)
            assert reply.status_code == 400 and len(reply.text) < 400, reply.text[:200]
        reply = httpx.get(url + "/api/seats", params={"game": "A" * 8000}, timeout=60)
        assert reply.status_code == 400 and len(reply.text) < 400


@pytest.mark.parametrize("route", ["/step", "/close", "/reset"])
@pytest.mark.parametrize("session_id", [{"a": 1}, [1], 5])
def test_a_session_id_of_the_wrong_type_gets_one_line(tmp_path_factory, route, session_id):
    with BackgroundServer(build("serve-env", tmp_path_factory)) as url:
        reply = httpx.post(url + route, json={"session_id": session_id, "session_token": "t",
                                              "action": {"message": "defect"}})
    assert reply.status_code == 401, reply.text
    assert reply.json() == {"detail": "session_id and session_token are strings (as /reset answered them)",
                            "code": "SESSION_ERROR"}


def test_a_deeply_nested_frame_gets_an_error_reply(server):
    """800 KB of nesting: an error frame (not a dropped socket); serve-env keeps the session."""
    with connect(server["url"].replace("http", "ws", 1) + server["ws"], open_timeout=5) as ws:
        ws.send("[" * 800_000)
        reply = json.loads(ws.recv(timeout=5))
        assert reply["type"] == "error"
        if server["kind"] == "serve-env":
            assert reply["data"] == {"message": "Invalid JSON: the JSON is nested too deeply", "code": "INVALID_JSON"}
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=5))["type"] == "observation"
        else:
            assert reply["message"] == "the JSON is nested too deeply"


def test_serve_env_answers_a_300_kb_game_id_over_its_websocket(tmp_path_factory):
    with BackgroundServer(build("serve-env", tmp_path_factory)) as url:
        with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=5) as ws:
            start = time.perf_counter()
            ws.send(json.dumps({"type": "reset", "data": {"game": HUGE_ID}}))
            reply = json.loads(ws.recv(timeout=30))
            assert time.perf_counter() - start < 0.5
        assert reply["data"]["code"] == "EXECUTION_ERROR" and len(reply["data"]["message"]) < 300


@pytest.mark.parametrize("command", ["serve-env", "arena"])
@pytest.mark.parametrize("option", ["--max-body-bytes=0", "--handshake-timeout=0", "--max-handshakes=-1"])
def test_bad_limits_are_refused_with_one_line(command, option):
    from typer.testing import CliRunner

    from socialgym_env.cli import app

    result = CliRunner().invoke(app, [command, option])
    assert result.exit_code == 2 and "must be positive" in result.output


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_sigterm_ends_the_server_while_it_is_attacked(kind, tmp_path):
    """The server process (as the CLI starts it) refuses a 120 MB "game" unread and a 300 kB one
    at once, and so still stops within seconds of SIGTERM sent right after them."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    with socket.socket() as probe:                      # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    extra = ["--log-dir", str(tmp_path)] if kind == "arena" else []
    process = subprocess.Popen([sys.executable, "-m", "socialgym_env.cli", kind, "--port", str(port), *extra],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        with raw_request(url, f"POST {SERVERS[kind]['start']} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         "application/json\r\nContent-Length: 125829120\r\n\r\n".encode()) as sock:
            assert status_of(sock) == 413
        body = json.dumps(SERVERS[kind]["body"](HUGE_ID)).encode()
        attacks = [raw_request(url, f"POST {SERVERS[kind]['start']} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                               f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
                   for _ in range(3)]                 # unbounded, each would hold the loop for seconds
        time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        start = time.monotonic()
        process.wait(timeout=60)
        assert time.monotonic() - start < 3, time.monotonic() - start
        for sock in attacks:
            sock.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_validation_refusals_never_echo_what_was_sent(tmp_path_factory):
    """A 5,000-character move, a 300 kB extra key, a list body: 422 with the reason, not the input."""
    with BackgroundServer(build("serve-env", tmp_path_factory)) as url:
        with httpx.Client(base_url=url) as http:
            session = http.post("/reset", json={"seed": 1}).json()["observation"]["session"]
            ids = {"session_id": session["id"], "session_token": session["token"]}
            replies = [http.post("/step", json={**ids, "action": {"message": "y" * 5000, HUGE_ID: 1}}),
                       http.post("/reset", json=[HUGE_ID])]
        with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=5) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            ws.recv(timeout=5)
            ws.send(json.dumps({"type": "step", "data": {"message": "z" * 5000}}))
            frame = ws.recv(timeout=5)
    for reply in replies:
        assert reply.status_code == 422 and len(reply.text) < 500 and "yyyy" not in reply.text, reply.text[:300]
    assert [e["type"] for e in replies[0].json()["detail"]] == ["string_too_long", "extra_forbidden"]
    assert "string_too_long" in frame and "zzzz" not in frame and len(frame) < 500



def _burst_of_upgrades(url: str, clients: int) -> dict:
    """``clients`` WebSocket clients that each connect and send their upgrade request at once
    (raw sockets: a client library's own event loop can lag behind its connects on a busy
    machine, and a client that has not sent its request is one that stalls), then read the
    answer: what each got."""
    from collections import Counter
    host, port = address(url)
    upgrade = (f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    socks = [raw_request(url, upgrade, timeout=60) for _ in range(clients)]
    outcomes = Counter()
    for sock in socks:
        with sock:
            head = b""
            while b"\r\n\r\n" not in head:
                try:
                    chunk = sock.recv(4096)
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    break
                head += chunk
            status = head.split(b" ", 2)[1] if head.startswith(b"HTTP/") else b"none"
            retry = b"retry-after:" in head.lower()
            outcomes["served" if status == b"101" else "503 with Retry-After" if status == b"503" and retry
                     else f"lost ({status.decode()})"] += 1
    return outcomes


def test_a_burst_of_honest_clients_is_served_while_stalled_ones_are_shed():
    """Issue 65: 192 WebSocket clients connecting at once lost 128 -- the surplus over
    --max-handshakes (64), dropped before their requests were read -- with max_sessions 1,024.
    Here the cap is already full of stalled connections, then 256 honest clients (loopback, one
    burst, each ends by itself) send their request at once: every one is served (or answered 503
    with Retry-After), and the stalled connections are the ones shed, before their timeout."""
    limits = ServerLimits()                            # the defaults: 64 waiting, 10 s, stalled after 1 s
    app = create_openenv_app(max_sessions=1024, idle_timeout_s=60.0, limits=limits)
    with BackgroundServer(app) as url:
        opened = time.monotonic()
        stalled = [raw_request(url, b"GET /health HTTP/1.1\r\nHost: x\r\n") for _ in range(limits.max_handshakes)]
        try:
            time.sleep(limits.stall_s + 0.2)
            outcomes = _burst_of_upgrades(url, 256)
            assert set(outcomes) <= {"served", "503 with Retry-After"}, outcomes
            assert outcomes["served"] > 0
            assert closed_by_server(stalled[0], 0.5)   # the oldest stalled one made room for the burst
            assert time.monotonic() - opened < limits.handshake_timeout_s, "shed by the cap, not the timeout"
        finally:
            for sock in stalled:
                sock.close()
