"""One install that coexists with the ecosystem (issue 39, item 1): the wheel holds no top-level
import name outside ``socialgym_*`` and holds every package-data file, and it installs beside
the OpenAI Agents SDK (whose top-level package is ``agents``) with both importable and
``socialgym`` working. Ready for PyPI (issue 64, item 3a): the sdist and the wheel built from it
pass ``twine check --strict`` with the metadata a PyPI page shows, and the wheel alone installs
into a fresh venv that runs ``socialgym list``."""
import configparser
import email
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import venv_with

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
def dists(tmp_path_factory) -> dict:
    """The project's sdist and the wheel ``python -m build`` makes from that sdist (so the sdist
    is shown to be complete), built from a copy of the checkout (setuptools writes build/ and
    *.egg-info beside setup.cfg), with the installed setuptools and without the network."""
    tmp = tmp_path_factory.mktemp("dists")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".cache", "runs", "build", "dist", "site", "*.egg-info", "__pycache__", ".pytest_cache",
        ".import_linter_cache", ".venv"))
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"),
                            str(source)], capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (sdist,) = (tmp / "dist").glob("socialgym-*.tar.gz")
    (wheel_path,) = (tmp / "dist").glob("socialgym-*.whl")
    return {"sdist": sdist, "wheel": wheel_path}


@pytest.fixture(scope="module")
def wheel(dists) -> Path:
    return dists["wheel"]


def twine_check(*paths) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, paths)],
                          capture_output=True, text=True, timeout=300)


def test_the_sdist_and_the_wheel_pass_twine_check_strict(dists):
    checked = twine_check(dists["sdist"], dists["wheel"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_twine_check_strict_fails_a_readme_pypi_cannot_render(wheel, tmp_path):
    """The check bites: the same wheel with a reStructuredText description that does not parse."""
    broken = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith(".dist-info/METADATA"):
                head, _, _ = data.decode().partition("\n\n")
                head = head.replace("Description-Content-Type: text/markdown", "Description-Content-Type: text/x-rst")
                data = (head + "\n\n" + "Title\n==\n\n`unclosed\n").encode()
            target.writestr(item, data)
    checked = twine_check(broken)
    assert checked.returncode != 0 and "FAILED" in checked.stdout, checked.stdout


# Extras the one setup command leaves out, and why: llama-cpp-python compiles llama.cpp (30+ min on 2 cores).
NOT_IN_ALL = {"server"}


def extras_requirements(setup_cfg: str) -> dict:
    """Each extra of ``setup.cfg`` -> the distribution names it requires (lower case, no versions)."""
    parser = configparser.ConfigParser()
    parser.read_string(setup_cfg)
    return {extra: {re.split(r"[\[<>=!~; ]", line.strip(), maxsplit=1)[0].lower()
                    for line in lines.splitlines() if line.strip() and not line.strip().startswith("#")}
            for extra, lines in parser["options.extras_require"].items()}


def extras_outside_all(setup_cfg: str) -> dict:
    """The extras (but NOT_IN_ALL) that require something `all` does not -> those names."""
    extras = extras_requirements(setup_cfg)
    return {extra: sorted(names - extras["all"]) for extra, names in extras.items()
            if extra not in NOT_IN_ALL | {"all"} and names - extras["all"]}


def test_the_all_extra_holds_every_other_extra_but_the_named_ones():
    """`make setup` installs `all`: an extra outside it (the CPU runtimes were) goes untested in CI."""
    setup_cfg = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    assert extras_outside_all(setup_cfg) == {}
    assert {"onnxruntime-genai", "openvino", "ctranslate2"} <= extras_requirements(setup_cfg)["all"]


def test_the_all_extra_check_finds_an_extra_left_out():
    setup_cfg = ("[options.extras_require]\nserver =\n    llama-cpp-python[server]>=0.3\nruntimes =\n"
                 "    # a comment\n    openvino>=2025.4\n    onnx>=1.17\nall =\n    onnx>=1.17\n")
    assert extras_outside_all(setup_cfg) == {"runtimes": ["openvino"]}


def wheel_metadata(wheel_path: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel_path) as archive:
        (name,) = [p for p in archive.namelist() if p.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def test_the_metadata_a_pypi_page_shows(wheel):
    metadata = wheel_metadata(wheel)
    classifiers = metadata.get_all("Classifier")
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    assert metadata["Description-Content-Type"] == "text/markdown" and "make demo" in metadata.get_payload()
    assert len(metadata["Keywords"].split(",")) >= 3
    # every Python version the classifiers name is one python_requires admits, and the oldest admitted is named
    oldest = tuple(map(int, re.fullmatch(r">=(\d+)\.(\d+)", metadata["Requires-Python"]).groups()))
    versions = [tuple(map(int, c.rsplit(":: ", 1)[1].split("."))) for c in classifiers
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert oldest in versions and min(versions) == oldest, versions
    assert "Operating System :: OS Independent" in classifiers
    assert any(c.startswith("Topic :: ") for c in classifiers)
    # PEP 639: with a License-Expression, license classifiers are deprecated (setuptools warns, PyPI may refuse)
    assert not [c for c in classifiers if c.startswith("License :: ")]
    # Project URLs only where the project itself names a home (CITATION.cff, mkdocs.yml): no invented hosts
    named = " ".join((ROOT / f).read_text(encoding="utf-8") for f in ("CITATION.cff", "mkdocs.yml"))
    for url in metadata.get_all("Project-URL") or []:
        assert url.split(", ", 1)[1] in named, url


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


def assert_socialgym_lists_every_game(bindir: Path, env: dict, cwd: Path) -> None:
    listed = subprocess.run([str(bindir / "socialgym"), "list"], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    import socialgym_env

    assert all(game in listed.stdout for game in socialgym_env.game_ids())


def test_the_wheel_alone_installs_into_a_fresh_venv_and_runs(wheel, tmp_path):
    bindir, env = venv_with([wheel], tmp_path)
    # the import comes from the venv's copy, not this checkout (an editable install would point here)
    where = subprocess.run([str(bindir / "python"), "-c", "import socialgym_env; print(socialgym_env.__file__)"],
                           cwd=tmp_path, env=env, check=True, capture_output=True, text=True, timeout=120).stdout
    assert where.startswith(str(tmp_path / "venv")) and not where.startswith(str(ROOT)), where
    assert_socialgym_lists_every_game(bindir, env, tmp_path)


def test_socialgym_installs_beside_the_openai_agents_sdk(wheel, tmp_path):
    # the two wheels go into the venv's own site-packages, where they would collide
    bindir, env = venv_with([wheel, sdk_wheel()], tmp_path)
    probe = ("import agents, socialgym_agents, socialgym_env; from agents import Agent; "
             "print(Agent.__module__); print(agents.__file__); print(socialgym_agents.__file__)")
    lines = subprocess.run([str(bindir / "python"), "-c", probe], cwd=tmp_path, env=env, check=True,
                           capture_output=True, text=True, timeout=120).stdout.split()
    site = str(tmp_path / "venv")
    assert lines[0] == "agents.agent"                                     # theirs: the SDK's Agent
    assert lines[1].startswith(site) and lines[2].startswith(site), lines   # both from the venv's wheels
    assert_socialgym_lists_every_game(bindir, env, tmp_path)
