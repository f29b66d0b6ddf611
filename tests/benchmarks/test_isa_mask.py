"""The AVX2-only emulation (socialgym_benchmarks/perf/isa.py): a child with its environment sees no
AVX-512 in any library, and the project reads the masked flags; without it the same child sees the
host as it is."""
import os

import pytest

from socialgym_agents.llm.loading import CPU_FLAGS_ENV, cpu_flags
from socialgym_benchmarks.perf import isa

HOST = isa.host_flags().split()


def test_masked_flags_keep_avx2_and_drop_what_zen3_lacks():
    flags = "fpu avx avx2 fma avx512f avx512bw avx512_bf16 avx512_vnni avx_vnni amx_bf16 gfni vaes vpclmulqdq"
    assert isa.masked_flags(flags).split() == ["fpu", "avx", "avx2", "fma", "vaes", "vpclmulqdq"]


def test_cpu_flags_follow_the_override(monkeypatch):
    monkeypatch.setenv(CPU_FLAGS_ENV, "fpu avx avx2")
    flag_lines = [line for line in cpu_flags().splitlines() if line.startswith("flags")]
    assert flag_lines and all(line.split(":", 1)[1].split() == ["fpu", "avx", "avx2"] for line in flag_lines)
    monkeypatch.delenv(CPU_FLAGS_ENV)
    assert ("avx512f" in cpu_flags()) == ("avx512f" in HOST)


def test_a_child_under_the_mask_sees_an_avx2_only_cpu():
    masked = isa.avx2_env()
    if "avx512f" in HOST and "cpuid_fault" in HOST:
        assert isa.seen_isa(dict(os.environ))[1], "the host itself should show AVX-512"
        capability, avx512 = isa.seen_isa(masked)
        assert (capability, avx512) == ("AVX2", False)
        assert "EMULATED AVX2-only" in isa.verify(masked)
    elif "avx512f" in HOST:               # no cpuid_fault: the mask cannot take, and says so
        with pytest.raises(SystemExit, match="did not take"):
            isa.verify(masked)
    else:                                 # an AVX2-only host: the child sees what it is
        assert isa.seen_isa(masked)[1] is False
    assert "avx512" not in masked[CPU_FLAGS_ENV] and "avx2" in masked[CPU_FLAGS_ENV].split()


def test_int8_under_the_mask_takes_fbgemm_and_cpu_peak_says_what_it_ran_as(smollm2_available):
    """dtype=int8 follows the flags the libraries see: FBGEMM's kernel on an AVX2-only CPU (oneDNN's
    int8 product has no fast path there); cpu_peak.py --emulate-avx2 prints the host and the mask."""
    import subprocess
    import sys
    from pathlib import Path
    masked = isa.avx2_env()
    kernel = subprocess.run([sys.executable, "-c", "from socialgym_agents.llm.int8 import int8_kernel; "
                             "from socialgym_agents.llm.loading import cpu_flags; print(int8_kernel(cpu_flags()))"],
                            env=masked, capture_output=True, text=True, check=True).stdout.split()
    assert kernel == ["fbgemm"]
    script = Path(isa.__file__).with_name("cpu_peak.py")
    out = subprocess.run([sys.executable, str(script), "--emulate-avx2", "--tokens", "16", "--prefill", "2x8",
                          "--decode", "2", "--context", "8", "--reps", "1", "--dtypes", "float32,int8", "--dtype", "int8"],
                         capture_output=True, text=True, timeout=600)
    can_mask = "avx512f" in HOST and "cpuid_fault" in HOST
    if can_mask or "avx512f" not in HOST:
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.splitlines()[0].startswith("host:") and "avx2" in out.stdout.splitlines()[0]
        assert ("ISA: EMULATED AVX2-only" in out.stdout) == can_mask
        assert "the runner in int8" in out.stdout and "int8" in out.stdout
    else:                                  # the mask cannot take here: the script refuses, not mislabels
        assert out.returncode != 0 and "did not take" in out.stderr + out.stdout
