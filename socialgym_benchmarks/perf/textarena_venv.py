"""Cached virtualenvs for code that runs beside TextArena but is no dependency of this project:
the engine benchmark's TextArena contender (``env_vs_textarena.py``) and the tests that run
TextArena's consumers' own code (UnstableBaselines, SPIRAL: tests/test_textarena_consumers.py).

    python -m socialgym_benchmarks.perf.textarena_venv      # the benchmark's venv, printed path

A venv is built once per (interpreter, package list) and reused; a marker file naming what it
holds is written last, so a build cut short is built again, never taken for a finished one. With
``system_site=True`` it sees this interpreter's packages (the project and textarena from the
``textarena`` extra), so only the packages named here are installed into it.
Packages named in ``no_deps`` are installed without their declared dependencies (those of
UnstableBaselines and SPIRAL are vLLM, Ray, torch, tinker: the tests stub what they import);
their wheels are taken from ``.cache/wheels`` when ``make setup-test`` has fetched them there.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path.home() / ".cache" / "socialgym"
WHEEL_CACHE = ROOT / ".cache" / "wheels"
BENCHMARK_VENV = CACHE / "textarena-venv"
BENCHMARK_PACKAGES = ("textarena==0.7.4", "numpy")


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def _pip(python: Path, args: list[str]) -> None:
    find_links = ["--find-links", str(WHEEL_CACHE)] if WHEEL_CACHE.is_dir() else []
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *find_links, *args], check=True)


def ensure_venv(folder: Path | None = None, packages=(), no_deps=(), system_site: bool = True,
                base_python: str = sys.executable) -> Path:
    """The Python of a venv holding ``packages`` (and ``no_deps``, installed without their
    dependencies), built on first use. ``folder`` None: a folder under the cache named by a
    hash of the interpreter and the package lists, so a changed list builds a new one."""
    spec = {"python": str(Path(base_python).resolve()), "version": sys.version if base_python == sys.executable else "",
            "packages": sorted(packages), "no_deps": sorted(no_deps), "system_site": system_site}
    if folder is None:
        digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
        folder = CACHE / f"venv-{digest}"
    marker = folder / "socialgym-venv.json"
    if marker.is_file() and json.loads(marker.read_text()) == spec:
        return venv_python(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=folder.name + ".building-", dir=folder.parent))
    try:
        # beside the base's packages, the base's pip installs into the venv: no pip of its own
        # (ensurepip is most of a venv's build time)
        options = ["--system-site-packages", "--without-pip"] if system_site else []
        subprocess.run([base_python, "-m", "venv", *options, str(building)], check=True)
        # a venv is not relocatable, so the packages go in after the rename into place
        shutil.rmtree(folder, ignore_errors=True)
        building.rename(folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    python = venv_python(folder)
    if packages:
        _pip(python, list(packages))
    if no_deps:
        _pip(python, ["--no-deps", *no_deps])
    marker.write_text(json.dumps(spec, sort_keys=True))        # last: the venv is complete
    return python


def main() -> None:
    print(ensure_venv(BENCHMARK_VENV, BENCHMARK_PACKAGES, system_site=False,
                      base_python=shutil.which("python3.12") or sys.executable))


if __name__ == "__main__":
    main()
