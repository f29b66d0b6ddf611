"""The cached venv builder shared by the engine benchmark and the TextArena consumer tests."""
import json
import subprocess

from socialgym_benchmarks.perf import textarena_venv


def test_a_venv_is_built_once_and_a_cut_short_one_is_built_again(tmp_path):
    folder = tmp_path / "venv"
    python = textarena_venv.ensure_venv(folder)
    marker = folder / "socialgym-venv.json"
    assert json.loads(marker.read_text())["packages"] == []
    # it sees this interpreter's packages (system_site): the project's own dependencies import
    assert subprocess.run([str(python), "-c", "import pettingzoo"]).returncode == 0
    built_at = marker.stat().st_mtime_ns
    assert textarena_venv.ensure_venv(folder) == python and marker.stat().st_mtime_ns == built_at   # reused
    marker.unlink()                    # a build cut short before its marker: built again
    assert textarena_venv.ensure_venv(folder) == python and marker.is_file()
    assert not list(tmp_path.glob("venv.building-*"))
