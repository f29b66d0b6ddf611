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
