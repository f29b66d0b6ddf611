"""One install that coexists with the ecosystem (issue 39, item 1): the wheel holds no top-level
import name outside ``socialgym_*`` and holds every package-data file, and it installs beside
the OpenAI Agents SDK (whose top-level package is ``agents``) with both importable and
``socialgym`` working."""
import configparser
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

PREFIX = "socialgym_"
# What setup-test fetches (the Makefile says it once): the SDK's pinned wheel and where it goes.
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
COEXIST_SDK = re.search(r"^COEXIST_SDK = (\S+)$", MAKEFILE, re.M).group(1)
WHEEL_CACHE = ROOT / re.search(r"^WHEEL_CACHE = (\S+)$", MAKEFILE, re.M).group(1)


def foreign_top_level(paths) -> set:
    """The top-level import names among a wheel's paths that are not the project's own."""
    names = set()
    for path in paths:
        top = path.split("/", 1)[0]
        if top.endswith((".dist-info", ".data")):
            continue
        name = top.removesuffix(".py") if "/" not in path else top
        if not name.startswith(PREFIX):
            names.add(name)
    return names


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from a copy of the checkout (setuptools writes build/ and
    *.egg-info beside setup.cfg), without the network."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".cache", "runs", "build", "dist", "site", "*.egg-info", "__pycache__", ".pytest_cache",
        ".import_linter_cache", ".venv"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(tmp / "dist"), str(source)], check=True, capture_output=True, text=True, timeout=600)
    (built,) = (tmp / "dist").glob("socialgym-*.whl")
    return built


def test_the_check_finds_a_foreign_top_level_name():
    paths = ["agents/__init__.py", "conftest.py", "socialgym_env/__init__.py", "socialgym_env.py",
             "socialgym-0.1.0.dist-info/METADATA", "socialgym-0.1.0.data/scripts/x"]
    assert foreign_top_level(paths) == {"agents", "conftest"}


def test_the_wheel_holds_only_socialgym_packages_and_all_their_data(wheel):
    with zipfile.ZipFile(wheel) as archive:
        paths = set(archive.namelist())
        (top_level,) = [p for p in paths if p.endswith(".dist-info/top_level.txt")]
        declared = archive.read(top_level).decode().split()
        (entry_points,) = [p for p in paths if p.endswith(".dist-info/entry_points.txt")]
        targets = re.findall(r"^\S+ = ([\w.]+):", archive.read(entry_points).decode(), re.M)
    assert foreign_top_level(paths) == set()
    # the benchmark scripts are run from a checkout and kept out of the wheel on purpose
    assert not [p for p in paths if p.startswith("socialgym_benchmarks/perf/")], "socialgym_benchmarks/perf/ is shipped"
    assert declared and all(name.startswith(PREFIX) for name in declared), declared
    assert targets and all(target.startswith(PREFIX) for target in targets), targets
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    for package, patterns in config["options.package_data"].items():
        for pattern in patterns.split():
            files = [p for p in (ROOT / package).glob(pattern) if p.is_file() and "__pycache__" not in p.parts]
            assert files, f"package data {package}/{pattern} matches no file"
            missing = [str(p.relative_to(ROOT)) for p in files if p.relative_to(ROOT).as_posix() not in paths]
            assert not missing, f"package data not in the wheel: {missing}"


def sdk_wheel() -> Path:
    """The pinned OpenAI Agents SDK wheel from the cache; fetched once if setup-test has not."""
    name, version = COEXIST_SDK.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    if not list(WHEEL_CACHE.glob(pattern)):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", COEXIST_SDK,
                        "-d", str(WHEEL_CACHE)], check=True, capture_output=True, text=True, timeout=300)
    return sorted(WHEEL_CACHE.glob(pattern))[-1]


def test_socialgym_installs_beside_the_openai_agents_sdk(wheel, tmp_path):
    # --system-site-packages: the dependencies (theirs and ours) come from this environment;
    # the two wheels go into the new one's own site-packages, where they would collide.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed",
                    str(wheel), str(sdk_wheel())], check=True, capture_output=True, text=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}     # only what the venv installed
    probe = ("import agents, socialgym_agents, socialgym_env; from agents import Agent; "
             "print(Agent.__module__); print(agents.__file__); print(socialgym_agents.__file__)")
    lines = subprocess.run([str(python), "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True,
                           text=True, timeout=120).stdout.split()
    site = str(venv)
    assert lines[0] == "agents.agent"                                     # theirs: the SDK's Agent
    assert lines[1].startswith(site) and lines[2].startswith(site), lines   # both from the venv's wheels
    listed = subprocess.run([str(bindir / "socialgym"), "list"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    import socialgym_env

    assert all(game in listed.stdout for game in socialgym_env.game_ids())
