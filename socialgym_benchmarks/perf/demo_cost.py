"""What ``make demo`` costs: wall time, CPU time and peak RSS of each of its jobs (one since issue
42: the main job, the improvement loop's Liar's Dice roster inside it), run exactly as the Makefile
runs them, and the CPU model they ran on.

    python socialgym_benchmarks/perf/demo_cost.py                    # make demo, into a fresh runs/demo_cost
    python socialgym_benchmarks/perf/demo_cost.py --only main        # the main job alone (the same, today)
    python socialgym_benchmarks/perf/demo_cost.py --command "python -c pass"   # any commands (smoke)
    python socialgym_benchmarks/perf/demo_cost.py --only main --runtime openvino   # its SmolLM2 through OpenVINO
    python socialgym_benchmarks/perf/demo_cost.py --emulate-avx2     # as an AVX2-only CPU runs it (isa.py)

The commands are those ``make -n demo`` prints (its tournament lines; ``setup`` is not re-run:
install first with ``make setup``), so this script cannot drift from the Makefile. Each job is a
child process; its CPU time (user + system) and peak RSS come from ``os.wait4`` in a small
launcher, so they count that job alone, whatever else the machine runs or this script's caller
holds. ``--runtime`` adds ``runtime=`` to every ``smollm2`` spec of the commands but those with an
``adapter=`` (a runtime plays the base model's export; they stay on PyTorch, and a line says so).
``--out`` must not hold an earlier run (the tournament would resume it); it is emptied
first unless ``--keep``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_benchmarks.perf.isa import avx2_env, host_flags, verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
JOB_NAMES = ("main",)          # make demo's tournament commands, in order


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def demo_commands(out: str, python: str = sys.executable) -> list:
    """The tournament commands of ``make demo`` (main job first), as the Makefile writes them."""
    listing = subprocess.run(["make", "-s", "-n", "demo", f"OUT={out}", f"PYTHON={shlex.quote(python)}"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    commands = [line.strip() for line in listing.splitlines() if "socialgym_env.cli tournament" in line]
    if len(commands) != len(JOB_NAMES):
        raise SystemExit(f"expected {len(JOB_NAMES)} tournament command(s) in `make -n demo`, found {len(commands)}")
    return commands


# A smollm2 spec inside a command's agent lists: after a quote, a comma or a roster's "game=".
SMOLLM2_SPEC = re.compile(r'(?<=[",=])smollm2(\?[^,"\s]*)?(?=[,"\s]|$)')


def with_runtime(command: str, runtime: str) -> tuple:
    """``command`` with ``runtime=`` added to its smollm2 specs, and the specs left on PyTorch
    (those with an adapter)."""
    kept: list = []

    def add(match) -> str:
        spec = match.group(0)
        if "adapter=" in spec:
            kept.append(spec)
            return spec
        return f"{spec}{'&' if '?' in spec else '?'}runtime={runtime}"
    return SMOLLM2_SPEC.sub(add, command), kept


# Linux charges a child's peak RSS with that of the process it was spawned from (exec keeps the
# replaced memory's high-water mark), so a job spawned straight from a large process (a test run
# with a model loaded) would report that process's size. A small launcher spawns the job and
# writes the job's own wait4 figures to a file: they start from the launcher's few MB.
_LAUNCHER = """import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[1], shell=True)
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[2], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss], out)
"""


def measure(command: str, env: Optional[dict] = None) -> dict:
    """Run ``command`` (a shell line, in the repository root, with ``env``); its wall time, CPU time
    and peak RSS."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch) / "usage.json"
        subprocess.run([sys.executable, "-c", _LAUNCHER, command, str(figures)], cwd=ROOT, check=True, env=env)
        rc, cpu_s, maxrss_kb = json.loads(figures.read_text())
    return {"command": command, "rc": rc, "wall_s": time.perf_counter() - started,
            "cpu_s": cpu_s, "peak_rss_mb": maxrss_kb / 1024}


def _on_runtime(command: str, runtime: str) -> str:
    changed, kept = with_runtime(command, runtime)
    for spec in kept:
        print(f"runtime={runtime}: {spec.split('?')[0]} with an adapter stays on PyTorch: {spec}")
    return changed


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/demo_cost", help="the demo's OUT folder")
    parser.add_argument("--only", choices=JOB_NAMES, help="run one of the jobs")
    parser.add_argument("--command", action="append", help="measure these shell commands instead")
    parser.add_argument("--keep", action="store_true", help="do not empty --out first")
    parser.add_argument("--runtime", choices=("openvino", "onnxruntime", "auto"),
                        help="play the demo's smollm2 specs through this CPU runtime (see above)")
    parser.add_argument("--emulate-avx2", action="store_true",
                        help="run the jobs as an AVX2-only CPU would (CPUID masked: isa.py)")
    args = parser.parse_args(argv)
    env = avx2_env() if args.emulate_avx2 else None
    isa_line = verify(env) if env else "ISA: native"
    if args.command:
        jobs = [(f"command {i + 1}", c) for i, c in enumerate(args.command)]
    else:
        if not args.keep:
            shutil.rmtree(ROOT / args.out, ignore_errors=True)
        jobs = list(zip(JOB_NAMES, demo_commands(args.out)))
        if args.only:
            jobs = [job for job in jobs if job[0] == args.only]
        if args.runtime:
            jobs = [(name, _on_runtime(command, args.runtime)) for name, command in jobs]
    results = []
    for name, command in jobs:
        print(f"== {name}: {command}", flush=True)
        results.append(dict(measure(command, env), name=name))
    print(f"\nCPU: {cpu_model()}, {os.cpu_count()} logical cores; load average before the last job ended: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"flags: {' '.join(f for f in host_flags().split() if f.startswith(('avx', 'amx')))}\n{isa_line}")
    print(f"{'job':<12} {'wall':>9} {'CPU time':>9} {'peak RSS':>10} {'exit':>5}")
    for r in results:
        print(f"{r['name']:<12} {r['wall_s']:>8.0f}s {r['cpu_s']:>8.0f}s {r['peak_rss_mb']:>7.0f} MB {r['rc']:>5}")
    if len(results) > 1:
        print(f"{'total':<12} {sum(r['wall_s'] for r in results):>8.0f}s {sum(r['cpu_s'] for r in results):>8.0f}s "
              f"{max(r['peak_rss_mb'] for r in results):>7.0f} MB")
    if any(r["rc"] for r in results):
        raise SystemExit(1)
    return results


if __name__ == "__main__":
    main()
