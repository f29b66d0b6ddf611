"""The verifiers environment package as Prime's Environments Hub takes it (issue 64, item 3c):
its own pyproject holds the Hub's metadata (description, tags, README, eval defaults) and builds
a wheel offline, and that wheel alone installs into a fresh venv whose ``load_environment``
builds the environment."""
import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

pytest.importorskip("verifiers")
pytest.importorskip("hatchling")

from tests.conftest import ROOT   # noqa: E402
from tests.helpers import venv_with   # noqa: E402

PACKAGE = ROOT / "environments" / "socialgym_verifiers"
PYPROJECT = tomllib.loads((PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verifiers_wheel")
    source = tmp / "source"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--no-index", "-w", str(tmp / "dist"), str(source)], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (path,) = (tmp / "dist").glob("socialgym_verifiers-*.whl")
    return path


def test_the_pyproject_holds_what_the_hub_shows():
    project = PYPROJECT["project"]
    assert project["name"] == "socialgym-verifiers" and project["description"]
    assert project["tags"] and all(isinstance(tag, str) and tag == tag.lower() for tag in project["tags"])
    assert (PACKAGE / project["readme"]).read_text(encoding="utf-8").startswith("# socialgym-verifiers")
    assert {"verifiers>=0.4", "socialgym"} <= set(project["dependencies"])
    assert PYPROJECT["build-system"]["build-backend"] == "hatchling.build"
    assert PYPROJECT["tool"]["verifiers"]["eval"]["num_examples"] > 0
    # the entry point the Hub and vf-eval call, defined in the package itself
    tree = ast.parse((PACKAGE / "socialgym_verifiers" / "__init__.py").read_text(encoding="utf-8"))
    assert "load_environment" in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_wheel_holds_the_package_and_its_metadata(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert "socialgym_verifiers/__init__.py" in names
    assert not [n for n in names if n.split("/")[0] not in ("socialgym_verifiers",) and ".dist-info/" not in n], names
    assert "Name: socialgym-verifiers" in text and "Requires-Dist: verifiers>=0.4" in text
    assert "Description-Content-Type: text/markdown" in text and "load_environment" in text


def test_the_wheel_installs_into_a_fresh_venv_and_loads_the_environment(wheel, tmp_path):
    bindir, env = venv_with([wheel], tmp_path)
    env["PYTHONPATH"] = str(ROOT)             # socialgym itself from this checkout; the package from the wheel
    probe = ("import socialgym_verifiers as package; print(package.__file__); "
             "env = package.load_environment(game='liars_dice', num_tasks=3); print(type(env).__name__)")
    ran = subprocess.run([str(bindir / "python"), "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    where, kind = ran.stdout.split()[-2:]
    assert where.startswith(str(tmp_path / "venv")), where
    assert kind == "SocialGymEnv"
