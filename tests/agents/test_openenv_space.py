"""The OpenEnv environment folder (environments/socialgym_openenv; issue 64 item 3b): OpenEnv's own
``openenv validate`` passes on the folder (what ``openenv push`` publishes) and on the live server
its ``server/app.py`` builds; its Space README's front matter agrees with openenv.yaml; the
server's JSON-RPC ``/mcp`` answers as JSON-RPC 2.0 says."""
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("openenv.cli")
yaml = pytest.importorskip("yaml")

from fastapi.testclient import TestClient   # noqa: E402

from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.openenv_app import create_openenv_app   # noqa: E402
from tests.conftest import ROOT   # noqa: E402

SPACE = ROOT / "environments" / "socialgym_openenv"


def openenv_validate(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openenv.cli", "validate", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_openenv_validate_passes_on_the_folder_in_every_deployment_mode():
    checked = openenv_validate(SPACE, "--json", "--verbose")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["passed"] and report["issues"] == [], report
    assert report["deployment_modes"] == {"docker": True, "openenv_serve": True, "uv_run": True,
                                          "python_module": True}


@pytest.mark.parametrize("remove", ["uv.lock", "openenv.yaml"])
def test_openenv_validate_fails_the_folder_without_what_it_needs(tmp_path, remove):
    copy = tmp_path / "socialgym_openenv"
    shutil.copytree(SPACE, copy, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    (copy / remove).unlink()
    assert openenv_validate(copy, "--json").returncode != 0


def test_the_space_readme_front_matter_matches_the_manifest():
    manifest = yaml.safe_load((SPACE / "openenv.yaml").read_text(encoding="utf-8"))
    _, front, body = (SPACE / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    space = yaml.safe_load(front)
    assert manifest["app"] == "server.app:app" and manifest["type"] == "space"
    assert space["sdk"] == "docker" and space["app_port"] == manifest["port"]
    assert "openenv" in space["tags"] and space["title"] and body.strip()
    assert f"EXPOSE {manifest['port']}" in (SPACE / "Dockerfile").read_text(encoding="utf-8")


def space_app():
    """The app object the manifest names (server/app.py), loaded as OpenEnv's runner loads it."""
    spec = importlib.util.spec_from_file_location("socialgym_openenv_space_app", SPACE / "server" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def test_openenv_validate_passes_on_the_running_server():
    with BackgroundServer(space_app()) as url:
        checked = openenv_validate("--url", url)
    report = json.loads(checked.stdout)
    assert checked.returncode == 0 and report["passed"], report["summary"]
    assert report["mode"] == "simulation"


def test_mcp_answers_json_rpc():
    client = TestClient(create_openenv_app())
    listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
    assert listed == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    unknown = client.post("/mcp", json={"jsonrpc": "2.0", "id": "x", "method": "tools/call"}).json()
    assert unknown["id"] == "x" and unknown["error"]["code"] == -32601
    assert client.post("/mcp", content=b"{not json").json()["error"]["code"] == -32700
    assert client.post("/mcp", json={"id": 2}).json()["error"]["code"] == -32600
    assert client.post("/mcp", json=[1]).json()["error"]["code"] == -32600
