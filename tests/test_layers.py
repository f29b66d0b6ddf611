"""The layers run one way (engine <- agents <- benchmarks / training) and the command line sits on top of all of them."""
import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest
import typer
from typer.testing import CliRunner

from tests.conftest import ROOT


def test_import_linter_contracts_hold(monkeypatch):
    from importlinter.cli import lint_imports

    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "setup.cfg"), no_cache=True) == 0


def test_the_no_cycle_contract_catches_a_planted_cycle(tmp_path, monkeypatch):
    """The setup.cfg contract that forbids import cycles, pointed at a package whose two modules
    import each other (inside a function, as adapters.py and hf_backend.py did), is broken."""
    import configparser

    from importlinter.cli import lint_imports

    contract = configparser.ConfigParser()
    contract.read(ROOT / "setup.cfg")
    acyclic = dict(contract["importlinter:contract:acyclic"])
    assert acyclic["type"] == "acyclic_siblings"
    package = tmp_path / "planted_cycle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "backend.py").write_text("from . import adapters\n")
    (package / "adapters.py").write_text("def load():\n    from .backend import load_model\n")
    (package / "loading.py").write_text("")
    planted = configparser.ConfigParser()
    planted["importlinter"] = {"root_packages": "\nplanted_cycle"}
    planted["importlinter:contract:acyclic"] = dict(acyclic, ancestors="\nplanted_cycle")
    with open(tmp_path / "planted.cfg", "w") as handle:
        planted.write(handle)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint_imports(config_filename=str(tmp_path / "planted.cfg"), no_cache=True) == 1
    (package / "adapters.py").write_text("def load():\n    from .loading import load_model\n")
    assert lint_imports(config_filename=str(tmp_path / "planted.cfg"), no_cache=True) == 0


def test_importing_the_engine_loads_no_upper_layer():
    probe = ("import sys, socialgym_env, socialgym_env.games, socialgym_env.socialmaze.cli; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('socialgym_agents', 'socialgym_benchmarks', 'socialgym_training')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _app_with(monkeypatch, entries):
    import socialgym_env.cli as cli

    root = typer.Typer()
    monkeypatch.setattr(cli, "app", root)
    monkeypatch.setattr(cli, "unavailable", {})
    monkeypatch.setattr(cli, "entry_points", lambda group: entries if group == cli.COMMAND_GROUP else [])
    return cli, root


def test_a_plugin_registers_its_commands(monkeypatch):
    cli, root = _app_with(monkeypatch, [EntryPoint("play", "socialgym_agents.cli:register", "socialgym.commands")])
    cli._load_plugins()
    result = CliRunner().invoke(root, ["--help"])
    assert result.exit_code == 0 and "play" in result.output


def test_a_missing_extra_is_named_not_swallowed(monkeypatch, capsys):
    fake = EntryPoint("fancy", "no_such_package_xyz.cli:register [train]", "socialgym.commands")
    cli, root = _app_with(monkeypatch, [fake])
    cli._load_plugins()
    assert "fancy" in cli.unavailable and "'train' extra" in cli.unavailable["fancy"]
    cli._explain_unknown_command(["fancy", "--x"])
    err = capsys.readouterr().err
    assert "no_such_package_xyz" in err and "pip install 'socialgym[train]'" in err


def test_a_broken_plugin_of_this_project_raises(monkeypatch):
    broken = EntryPoint("broken", "socialgym_agents.no_such_module:register", "socialgym.commands")
    cli, _ = _app_with(monkeypatch, [broken])
    with pytest.raises(ModuleNotFoundError):
        cli._load_plugins()


def test_installed_entry_points_give_the_full_command_line():
    result = subprocess.run([sys.executable, "-m", "socialgym_env.cli", "--help"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for command in ("list", "play", "tournament", "leaderboard", "replay", "maze", "spartan", "export", "detect",
                    "analyze", "jester", "spy"):
        assert command in result.stdout
