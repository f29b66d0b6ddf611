"""An AVX2-only CPU (AMD Zen 3's class) emulated on a host with AVX-512, for the benchmarks that
give a figure per CPU type (``cpu_runtimes.py --emulate-avx2``, ``demo_cost.py --emulate-avx2``).

The child processes get ``avx2_only.c`` preloaded: CPUID faults (Linux's ARCH_SET_CPUID, on CPUs
with the ``cpuid_fault`` flag) and returns the host's answer less the AVX-512, AMX, AVX-VNNI and
GFNI bits, so every library that picks its kernels from CPUID (oneDNN under PyTorch and OpenVINO,
PyTorch's own, ONNX Runtime's MLAS, CTranslate2, numpy) picks the AVX2 ones. /proc/cpuinfo does
not change, so ``SOCIALGYM_CPU_FLAGS`` carries the masked flag list to the project's own reading
of it (``dtype=auto`` then runs float32, as on a Zen 3). The libraries' ISA caps are set as well
(ONEDNN_MAX_CPU_ISA and the others), for a host where the mask cannot take. What this does not
emulate: the micro-architecture (Zen 4's caches, clocks and AVX2 throughput stay), so a figure is
the host running an AVX2-only CPU's code paths, not a Zen 3. ``verify`` refuses to go on when a
child still sees AVX-512.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_agents.llm.loading import CPU_FLAGS_ENV, cache_root, cpu_flags  # noqa: E402

SOURCE = Path(__file__).with_name("avx2_only.c")
EMULATION_MARK = "SOCIALGYM_EMULATED_ISA"
# The libraries' own ISA caps, for what the CPUID mask might miss (OpenVINO honours its cap only in
# builds with debug capabilities; MLAS takes none: the mask is what holds it).
AVX2_LIMITS = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "OV_CPU_MAX_ISA": "AVX2",
               "CT2_FORCE_CPU_ISA": "AVX2"}
# Flags a Zen 3 lacks that a Zen 4 has (the mask clears their CPUID bits).
MASKED_FLAGS = ("avx512", "amx", "avx_vnni", "gfni")

_CHECK = ("import numpy, torch\n"
          "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
          "print(torch.backends.cpu.get_cpu_capability(), int(any(v for k, v in f.items() if 'AVX512' in k)))")


def masked_flags(flags: str) -> str:
    """The ``flags`` line's list (space-separated) less what an AVX2-only CPU lacks."""
    return " ".join(f for f in flags.split() if not f.startswith(MASKED_FLAGS))


def host_flags() -> str:
    return next((line.split(":", 1)[1].strip() for line in cpu_flags().splitlines() if line.startswith("flags")), "")


def build() -> Path:
    """The preload library, compiled once per source version under the cache (needs ``cc``)."""
    source = SOURCE.read_bytes()
    target = cache_root() / "isa" / f"avx2_only-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if target.exists():
        return target
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("--emulate-avx2 needs a C compiler (cc) to build its CPUID mask")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(SOURCE)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"--emulate-avx2: building the CPUID mask failed: {result.stderr.strip()[:200]}")
        os.replace(built, target)
    return target


def avx2_env(env: dict | None = None) -> dict:
    """``env`` (default: this process's) for a child that sees an AVX2-only CPU."""
    env = dict(os.environ if env is None else env)
    preload = str(build())
    env["LD_PRELOAD"] = " ".join(p for p in (preload, env.get("LD_PRELOAD", "")) if p)
    env[CPU_FLAGS_ENV] = masked_flags(host_flags())
    env[EMULATION_MARK] = "avx2"
    env.pop("PYTHONFAULTHANDLER", None)      # faulthandler's SIGSEGV handler would take CPUID's faults
    return {**env, **AVX2_LIMITS}


def seen_isa(env: dict | None = None) -> tuple:
    """(PyTorch's CPU capability, whether numpy sees any AVX-512) in a child with ``env``."""
    out = subprocess.run([sys.executable, "-c", _CHECK], env=env, capture_output=True, text=True, check=True)
    capability, avx512 = out.stdout.split()
    return capability, avx512 == "1"


def verify(env: dict) -> str:
    """One line saying what a child with ``env`` sees; SystemExit if it still sees AVX-512."""
    capability, avx512 = seen_isa(env)
    if avx512 or capability.startswith("AVX512"):
        raise SystemExit("--emulate-avx2: the CPUID mask did not take (this kernel or CPU lacks cpuid_fault): "
                         f"a child still sees AVX-512 (PyTorch {capability})")
    return (f"ISA: EMULATED AVX2-only CPU (CPUID masked: PyTorch sees {capability}, numpy no AVX-512; "
            f"flags as the project reads them: {' '.join(f for f in env[CPU_FLAGS_ENV].split() if f.startswith('avx'))}) "
            "- the host's micro-architecture running AVX2 code paths, not a Zen 3")


def rerun_as_avx2(script: str, argv: list) -> None:
    """Re-run ``script`` with ``argv`` as an AVX2-only CPU would (before any library has read
    CPUID); returns at once in the re-run itself."""
    if os.environ.get(EMULATION_MARK) != "avx2":
        os.execve(sys.executable, [sys.executable, str(Path(script).resolve()), *argv], avx2_env())


def emulation_line() -> str:
    """What this process runs as (for benchmarks re-run under ``avx2_env``)."""
    if os.environ.get(EMULATION_MARK) != "avx2":
        return "ISA: native"
    return verify(dict(os.environ))
