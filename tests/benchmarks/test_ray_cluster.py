"""A tournament on a running Ray cluster logs the same records as a local run.

The cluster is real (``ray start --head``: GCS, raylet, Ray Client server), started once for
the module on 127.0.0.1 with usage reporting off, and the tournament goes through the CLI
(``--backend ray --ray-address``) in a subprocess, as a user runs it: once joining the cluster
at ``127.0.0.1:PORT``, once through Ray Client at ``ray://127.0.0.1:PORT``. The cluster's
processes get no PYTHONPATH, so the outside game (``examples/socialgym-example-game``,
importable only from the driver's path) reaches the workers only through the job's
``runtime_env py_modules``. 36-45 s on 2 shared cores: the cluster's start and the local run
13-15 s, each tournament on the cluster 9-13 s, the stop 3 s.
"""
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import psutil
import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "socialgym-example-game"
GAMES = "prisoners_dilemma,kuhn_poker,lowest_unique_bid"
LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_start(head: subprocess.Popen, log: Path, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while "Ray runtime started" not in log.read_text():
        if head.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"ray start --head did not come up:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


def _stop(head: subprocess.Popen) -> list:
    """End the cluster; the processes that outlived ``ray start --block``'s own stop. SIGTERM to
    it drains the node and ends every process it started; whatever outlived that is killed by its
    id. Not ``ray stop``: that ends every Ray process of this user on the machine, other runs'
    included."""
    started = psutil.Process(head.pid).children(recursive=True) if head.poll() is None else []
    head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        head.kill()
        head.wait()
    _, outlived = psutil.wait_procs(started, timeout=10)
    for process in outlived:
        process.kill()
    return outlived


@pytest.fixture(scope="module")
def cluster():
    """``{"address", "client", "head", "auth"}`` of a one-node Ray cluster on 127.0.0.1, for this module."""
    assert importlib.util.find_spec("ray"), "ray is missing: the all extra installs it (pip install -e '.[all]')"
    temp = Path(tempfile.mkdtemp(prefix="sg-ray-"))       # short: Ray's socket paths live under it
    port, client_port = _free_port(), _free_port()
    # Token auth with a token of its own: Ray turns it on for `ray start` whenever
    # ~/.ray/auth_token exists (any local ray.init() writes one), and a driver given an address
    # then needs the token; this way the test does not depend on what ran before it.
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # Multi-node mode off: Ray keeps 127.0.0.1 as the node's address instead of resolving it to
    # this machine's outward one (whose servers would listen on every interface).
    env.update(auth, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    log = temp / "head.log"
    with open(log, "w") as out:
        head = subprocess.Popen(
            [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
             "--node-ip-address=127.0.0.1", f"--port={port}", f"--ray-client-server-port={client_port}",
             "--include-dashboard=false", "--num-cpus=2", "--disable-usage-stats", f"--temp-dir={temp}"],
            env=env, cwd=temp, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for_start(head, log)
        yield {"address": f"127.0.0.1:{port}", "client": f"ray://127.0.0.1:{client_port}", "head": head,
               "auth": auth}
    finally:
        outlived = _stop(head)
        shutil.rmtree(temp, ignore_errors=True)
    assert not outlived, f"Ray processes outlived the cluster's stop: {outlived}"


def _listening(head: subprocess.Popen) -> set:
    """``(process name, ip)`` of every socket the cluster's processes listen on."""
    found = set()
    for process in [psutil.Process(head.pid), *psutil.Process(head.pid).children(recursive=True)]:
        try:
            found |= {(process.name(), c.laddr.ip) for c in process.net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:       # a worker that ended meanwhile
            continue
    return found


def _tournament(out: Path, *backend: str, auth: Optional[dict] = None) -> dict:
    """Run a small seeded scripted tournament through the CLI; ``{game: sorted records}``."""
    env = dict(os.environ, **(auth or {}), PYTHONPATH=os.pathsep.join([str(ROOT), str(EXAMPLE)]))
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)   # the CLI keeps a loopback address there itself
    command = [sys.executable, "-m", "socialgym_env.cli", "--game-module", "socialgym_example_game.lowest_unique_bid",
               "tournament", "--games", GAMES, "--agents", "scripted:random,scripted:heuristic",
               "--roster", "lowest_unique_bid=scripted:random,scripted:random,scripted:random",
               "--episodes", "2", "--seed", "7", "--workers", "2", "--bootstrap", "10", "--out", str(out), *backend]
    done = subprocess.run(command, env=env, cwd=out.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Each backend appends a record when its episode ends, so the order of lines in a game's log
    # differs by backend (and by run on Ray); the records themselves are the same bytes.
    logs = {path.stem: sorted(path.read_text().splitlines()) for path in sorted((out / "logs").glob("*.jsonl"))}
    assert set(logs) == set(GAMES.split(","))
    assert not [r for lines in logs.values() for r in map(json.loads, lines) if r.get("failed")]
    return logs


@pytest.fixture(scope="module")
def local_records(tmp_path_factory):
    return _tournament(tmp_path_factory.mktemp("local") / "out", "--backend", "local")


def test_a_tournament_on_the_cluster_logs_what_a_local_run_logs(cluster, local_records, tmp_path):
    assert _tournament(tmp_path / "out", "--backend", "ray", "--ray-address", cluster["address"],
                       auth=cluster["auth"]) == local_records
    listening = _listening(cluster["head"])
    assert {name for name, _ in listening} >= {"gcs_server", "raylet"}
    assert {ip for _, ip in listening} <= LOOPBACK, listening


def test_a_tournament_through_ray_client_logs_what_a_local_run_logs(cluster, local_records, tmp_path):
    assert _tournament(tmp_path / "out", "--backend", "ray", "--ray-address", cluster["client"],
                       auth=cluster["auth"]) == local_records
    assert {ip for _, ip in _listening(cluster["head"])} <= LOOPBACK
