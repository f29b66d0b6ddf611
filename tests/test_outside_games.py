"""A game from another package is first-class: installed with its ``socialgym.games`` entry
point (the example in ``examples/socialgym-example-game``) it reaches ``socialgym rules``,
``socialgym play`` and a two-worker tournament; registered with ``--game-module`` or
``register_game`` it reaches spawned workers; a registration workers cannot import is an error
before anything is played."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import socialgym_env
from socialgym_env import registry
from socialgym_env.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "socialgym-example-game"
GAME = "lowest_unique_bid"


def install_offline(project: Path, target: Path) -> None:
    """Install a pure-Python project into ``target`` as pip does (the package folders and a
    ``.dist-info`` with METADATA and entry_points.txt), read from its pyproject.toml. No build
    backend or network is needed, so the test runs from a clean clone in CI."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())
    spec = meta["project"]
    for package in meta["tool"]["setuptools"]["packages"]:
        shutil.copytree(project / package, target / package, ignore=shutil.ignore_patterns("__pycache__"))
    dist_info = target / f"{spec['name'].replace('-', '_')}-{spec['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {spec['name']}\nVersion: {spec['version']}\n")
    groups = spec.get("entry-points", {})
    (dist_info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
        for group, entries in groups.items()))
    (dist_info / "RECORD").write_text("")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    install_offline(EXAMPLE, target)
    return target


def run(site_dir, *args, cwd=None, timeout=180):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site_dir), str(ROOT)]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)


def test_an_installed_game_reaches_rules_play_and_a_two_worker_tournament(site, tmp_path):
    rules = run(site, "-m", "socialgym_env.cli", "rules", GAME)
    assert rules.returncode == 0, rules.stderr
    assert rules.stdout.startswith("Lowest Unique Bid — 3 players")

    log = tmp_path / "play.jsonl"
    played = run(site, "-m", "socialgym_env.cli", "play", GAME, "--agents", "scripted:random",
                 "--seed", "1", "--log", str(log))
    assert played.returncode == 0, played.stderr
    record = json.loads(log.read_text())
    assert record["game"] == GAME and not record.get("failed") and record["finished"]

    out = tmp_path / "tour"
    tour = run(site, "-m", "socialgym_env.cli", "tournament", "--games", GAME, "--agents",
               "scripted:random,scripted:constant:bid 1", "--episodes", "2", "--workers", "2",
               "--bootstrap", "20", "--out", str(out))
    assert tour.returncode == 0, tour.stderr
    records = [json.loads(line) for line in (out / "logs" / f"{GAME}.jsonl").read_text().splitlines()]
    assert records and not any(r.get("failed") for r in records)
    assert f"{len(records)} played now" in tour.stdout


def test_the_example_packages_own_tests_pass_with_the_public_checks(site):
    result = run(site, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests"), cwd=EXAMPLE)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "3 passed" in result.stdout


def test_a_broken_entry_point_is_reported_and_does_not_break_the_import(site, tmp_path):
    broken = tmp_path / "broken.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0\n")
    (broken / "entry_points.txt").write_text("[socialgym.games]\nnot_here = no_such_package.game\n"
                                             "chess = socialgym_example_game.lowest_unique_bid\n")
    result = run(os.pathsep.join([str(site), str(tmp_path)]), "-c",
                 "import socialgym_env; from socialgym_env import registry; "
                 "print(sorted(registry.unavailable_games)); print(socialgym_env.game_class('chess').info.id)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["['chess', 'not_here']", "chess"]
    assert "no_such_package" in result.stderr and "is a built-in game" in result.stderr


def test_game_module_option_registers_for_one_command(tmp_path):
    result = run(EXAMPLE, "-m", "socialgym_env.cli", "--game-module", "socialgym_example_game.lowest_unique_bid",
                 "play", GAME, "--seed", "2", "--log", str(tmp_path / "p.jsonl"), "--quiet")
    assert result.returncode == 0, result.stderr
    bad = run(EXAMPLE, "-m", "socialgym_env.cli", "--game-module", "socialgym_example_game.nope", "list")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "socialgym: error: cannot import game module 'socialgym_example_game.nope': No module named "
        "'socialgym_example_game.nope' (run with --debug for the traceback)"]


@pytest.fixture
def example_registered(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    socialgym_env.register_game("socialgym_example_game.lowest_unique_bid")
    yield GAME
    registry.unregister_game(GAME)


def test_a_game_registered_here_reaches_spawned_workers(example_registered, tmp_path):
    from socialgym_agents.runner import EpisodeJob
    from socialgym_benchmarks.tournament.backends import run_local
    shards = {GAME: [EpisodeJob(GAME, seed, ["scripted:random"] * 3) for seed in range(2)],
              "prisoners_dilemma": [EpisodeJob("prisoners_dilemma", 0, ["scripted:random"] * 2)]}
    played = run_local(shards, tmp_path, workers=2, progress=False, start_method="spawn")
    records = [json.loads(line) for line in (tmp_path / f"{GAME}.jsonl").read_text().splitlines()]
    assert played == 3 and len(records) == 2
    assert not any(r.get("failed") for r in records)


def test_a_registration_workers_cannot_import_is_an_error_before_play(tmp_path):
    from socialgym_agents.runner import EpisodeJob
    from socialgym_benchmarks.tournament.backends import run_local
    from socialgym_env.games.prisoners_dilemma import PrisonersDilemma

    class LocalGame(PrisonersDilemma):          # exists only inside this function
        info = dataclasses.replace(PrisonersDilemma.info, id="local_pd")

    socialgym_env.register_game(LocalGame)
    try:
        with pytest.raises(ConfigError, match="local_pd were registered from a class that worker processes cannot"):
            run_local({"local_pd": [EpisodeJob("local_pd", 0, ["scripted:random"] * 2)]}, tmp_path, workers=2,
                      progress=False, start_method="spawn")
        assert list(tmp_path.iterdir()) == []             # nothing played, nothing logged
        # one worker (this process) plays it
        assert run_local({"local_pd": [EpisodeJob("local_pd", 0, ["scripted:random"] * 2)]}, tmp_path,
                         workers=1, progress=False) == 1
    finally:
        registry.unregister_game("local_pd")


def test_a_game_registered_here_reaches_ray_actors(example_registered, tmp_path):
    import ray                                           # .ci/run installs ray: a missing one fails
    from socialgym_agents.runner import EpisodeJob
    from socialgym_benchmarks.tournament.backends import run_ray
    assert not ray.is_initialized()      # run_ray starts the local instance, with the game's package on its path
    shards = {GAME: [EpisodeJob(GAME, seed, ["scripted:random"] * 3) for seed in range(4)]}
    try:
        played = run_ray(shards, tmp_path, workers=2, progress=False, chunk_size=2)
    finally:
        ray.shutdown()
    records = [json.loads(line) for line in (tmp_path / f"{GAME}.jsonl").read_text().splitlines()]
    assert played == 4 and sorted(r["seed"] for r in records) == [0, 1, 2, 3]
    assert not any(r.get("failed") for r in records)


def test_failed_episodes_are_counted_apart_from_played(tmp_path, monkeypatch, capsys):
    """Whatever makes episodes fail inside the workers, the command says how many failed."""
    from socialgym_agents.runner import failed_record
    from socialgym_benchmarks import cli as bench_cli
    from socialgym_benchmarks.tournament import plan as tour
    from socialgym_env.logs import append_episode

    real_run_local = tour.run_local

    def one_failing_worker(shards, log_dir, **options):       # the first episode fails, the rest play
        (game, jobs), = shards.items()
        append_episode(log_dir / f"{game}.jsonl", failed_record(jobs[0], RuntimeError("worker lost the game")))
        return 1 + real_run_local({game: jobs[1:]}, log_dir, **options)

    monkeypatch.setattr(tour, "run_local", one_failing_worker)
    bench_cli.run_tournament_command(games=["prisoners_dilemma"], agents=["scripted:random"], episodes=2,
                                     out=tmp_path, workers=1, progress=False, bootstrap=10)
    out = capsys.readouterr().out
    assert "2 played now; 1 of the episodes played now FAILED" in out


def test_heuristic_in_a_game_without_a_baseline_is_refused_not_played_at_random(example_registered, monkeypatch):
    """scripted:heuristic in an outside game with no registered baseline: refused before play by
    the check (one line naming the games that have one), refused at the first decision when no
    check ran (a failed record with that reason), accepted once the game's package registers one."""
    from socialgym_agents import baselines
    from socialgym_agents.registry import PolicySpecError, check_spec
    from socialgym_agents.runner import EpisodeJob, run_jobs

    with pytest.raises(PolicySpecError) as refused:
        check_spec("scripted:heuristic", games=["prisoners_dilemma", GAME])
    message = str(refused.value)
    assert "\n" not in message and f"no baseline for {GAME} " in message
    having = message.split("games with one: ")[1].split(", ")
    assert "prisoners_dilemma" in having and GAME not in having and len(having) == len(socialgym_env.list_games()) - 1
    check_spec("scripted:heuristic", games=["prisoners_dilemma"])        # a game with a baseline passes

    record = run_jobs([EpisodeJob(GAME, 0, ["scripted:heuristic", "scripted:random", "scripted:random"])])[0]
    assert record["failed"] and f"no baseline for {GAME}" in record["error"]

    from socialgym_agents.scripted import RandomPolicy
    monkeypatch.setitem(baselines._REGISTERED, GAME, RandomPolicy)   # the documented remedy
    check_spec("scripted:heuristic", games=[GAME])
    record = run_jobs([EpisodeJob(GAME, 0, ["scripted:heuristic", "scripted:random", "scripted:random"])])[0]
    assert record["finished"] and not record.get("failed")


@pytest.mark.parametrize("command", [["play", GAME], ["tournament", "--games", GAME, "--out", "OUT"]])
def test_the_cli_refuses_heuristic_in_a_game_without_a_baseline(command, tmp_path):
    argv = [str(tmp_path / "out") if part == "OUT" else part for part in command]
    result = run(EXAMPLE, "-m", "socialgym_env.cli", "--game-module", "socialgym_example_game.lowest_unique_bid",
                 *argv, "--agents", "scripted:random,scripted:heuristic", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"scripted:heuristic has no baseline for {GAME}" in lines[0], result.stderr
    assert "games with one: " in lines[0] and "prisoners_dilemma" in lines[0]
    assert list(tmp_path.iterdir()) == []                 # nothing played, nothing written
