"""Hidden Role Deduction: answer scoring, the Gymnasium env, the data set CLI and the baselines."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from typer.testing import CliRunner

import socialgym_env.socialmaze as sm
from socialgym_env.socialmaze import (
    ENV_ID,
    HiddenRoleDeductionEnv,
    MazeConfig,
    MazeInstance,
    Puzzle,
    Role,
    Statement,
    generate_dataset,
    generate_instance,
    read_jsonl,
    score_answer,
    verify,
)
from socialgym_env.socialmaze.baselines import exact_answer, heuristic_guess
from socialgym_env.socialmaze.cli import app

I, C, R, L = Role.INVESTIGATOR, Role.CRIMINAL, Role.RUMORMONGER, Role.LUNATIC
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lunatic_case() -> MazeInstance:
    """Criminal is Player 3, Player 1 is the Lunatic (told Criminal), 6 players."""
    cfg = MazeConfig(n_players=6, n_rounds=1, variant="full", n_rumormongers=1, n_lunatics=1)
    puzzle = Puzzle(cfg, C, (Statement(1, 2, 3, True),))
    return MazeInstance("case", 0, puzzle, (L, I, C, I, R, I), n_consistent=1)


# --- scoring -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, criminal, role, reason",
    [
        ("Criminal: Player 3; My role: Lunatic", 3, L, None),
        ('{"criminal": 3, "role": "Lunatic"}', 3, L, None),
        ('```json\n{"Criminal": "P3", "my_role": "lunatic"}\n```', 3, L, None),
        ("Player 2 is not the criminal... Final answer: Player 3 is the criminal and I am the Lunatic.", 3, L, None),
        ("The criminal is P3. My true role is the Lunatic.", 3, L, None),
        ("I'm actually a lunatic; criminal = 3", 3, L, None),
        ("3, Lunatic", 3, L, None),
        ("Player 1's role: Rumourmonger. Criminal - P3", 3, R, None),
        ("Player 3", 3, None, "no role found"),
        ("P3", 3, None, "no role found"),
        ("3", 3, None, "no role found"),
        ("player 3 is the criminal", 3, None, "no role found"),
        ("Player 3 is not the criminal; my role is Lunatic", None, L, "no criminal found"),
        ("Player 2 is the criminal. Player 3 is the criminal.", None, None,
         "several criminals named: [2, 3]; no role found"),
        ("Criminal: Player 13; My role: Lunatic", None, L, "player 13 is out of range 1..6"),
        ("my role is Lunatic, no wait, my role is Investigator; criminal: P3", 3, None,
         "several roles named: ['Investigator', 'Lunatic']"),
        ("banana", None, None, "no criminal found; no role found"),
        ("Player 1", 1, C, None),
        ("My role: Criminal", 1, C, None),
        ('{"criminal": "someone", "role": "wizard"}', None, None,
         "criminal value 'someone' is not a player number; role value 'wizard' is not a role"),
    ],
)
def test_parse_and_score(lunatic_case, text, criminal, role, reason):
    r = score_answer(text, lunatic_case)
    assert (r.parsed_criminal, r.parsed_role, r.reason) == (criminal, role, reason)
    assert r.criminal_correct == (criminal == 3)
    assert r.role_correct == (role == L)
    assert r.reward == (1.0 if criminal == 3 and role == L else 0.0)


def test_score_accepts_mappings_and_rejects_non_text(lunatic_case):
    assert score_answer({"criminal": "Player 3", "role": "LUNATIC"}, lunatic_case).reward == 1.0
    r = score_answer(None, lunatic_case)
    assert (r.reward, r.reason) == (0.0, "answer must be text, got NoneType")


# --- Gymnasium env -------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"preset": "hard", "variant": "original", "render_mode": "ansi"}])
def test_env_passes_gymnasium_checker_without_warnings(kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(ENV_ID, **kwargs).unwrapped)
    assert [str(w.message) for w in caught] == []


def test_registration_is_idempotent():
    sm.register()
    sm.register()
    assert gym.spec(ENV_ID).entry_point is HiddenRoleDeductionEnv


def test_env_episode_rewards_and_info():
    env = gym.make(ENV_ID, preset="easy", variant="full")
    obs, info = env.reset(seed=5)
    obs2, _ = env.reset(seed=5)
    assert obs == obs2 and env.observation_space.contains(obs)
    inst = env.unwrapped.instance
    assert obs["text"] == inst.prompt()
    assert set(info) == {"id", "n_players", "variant", "told_role", "evidence"}  # no answer leaked
    assert info["told_role"] == inst.told_role.value

    _, reward, terminated, truncated, info = env.step(f"Criminal: Player {inst.criminal}; My role: {inst.player1_role}")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert (info["criminal_correct"], info["role_correct"], info["reason"]) == (True, True, None)
    assert info["answer"] == {"criminal": inst.criminal, "role": inst.player1_role.value}

    env.reset(seed=5)
    wrong_role = next(r for r in Role if r != inst.player1_role)
    _, reward, _, _, info = env.step(f'{{"criminal": {inst.criminal}, "role": "{wrong_role}"}}')
    assert (reward, info["criminal_correct"], info["role_correct"]) == (0.0, True, False)

    env.reset(seed=5)
    _, reward, _, _, info = env.step("no idea")
    assert (reward, info["parsed_criminal"], info["reason"]) == (0.0, None, "no criminal found; no role found")
    with pytest.raises(RuntimeError, match="episode is over"):
        env.unwrapped.step("3")


def test_env_evaluates_a_given_instance():
    inst = generate_instance(MazeConfig.from_preset("hard", "lunatic"), 8)
    env = HiddenRoleDeductionEnv(preset="hard")
    obs, info = env.reset(options={"instance": json.loads(json.dumps(inst.to_dict()))})
    assert env.instance == inst and obs["text"] == inst.prompt() and info["id"] == inst.id


def test_env_custom_size_fits_its_space():
    env = gym.make(ENV_ID, n_players=14, n_rounds=4, variant="full", n_rumormongers=2, n_lunatics=2)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["text"].count(" says Player ") == 14 * 4


def test_env_rejects_bad_config():
    with pytest.raises(ValueError, match="valid presets: easy, hard"):
        gym.make(ENV_ID, preset="tiny")
    with pytest.raises(ValueError, match="n_players must be >= 4"):
        HiddenRoleDeductionEnv(n_players=2)


# --- CLI and JSONL -------------------------------------------------------------------------

def test_cli_generate_writes_reproducible_certified_jsonl(tmp_path):
    runner = CliRunner()
    args = ["generate", "--n", "6", "--seed", "3", "--preset", "hard", "--variant", "lunatic", "--out"]
    res = runner.invoke(app, args + [str(tmp_path / "a.jsonl")])
    assert res.exit_code == 0, res.output
    assert "wrote 6 instances" in res.output
    assert runner.invoke(app, args + [str(tmp_path / "b.jsonl")]).exit_code == 0
    a = (tmp_path / "a.jsonl").read_bytes()
    assert a == (tmp_path / "b.jsonl").read_bytes()

    rows = [json.loads(line) for line in a.decode().splitlines()]
    assert len(rows) == 6
    assert set(rows[0]) == {
        "schema_version", "id", "seed", "preset", "n_players", "n_rounds", "variant", "n_rumormongers",
        "n_lunatics", "told_role", "statements", "prompt", "answer", "roles", "evidence",
        "n_consistent_assignments", "attempts"}
    assert {(r["preset"], r["n_players"], r["variant"], r["n_lunatics"]) for r in rows} == {("hard", 10, "lunatic", 1)}
    for inst, row in zip(read_jsonl(tmp_path / "a.jsonl"), rows):
        assert verify(inst.puzzle).answer == (row["answer"]["criminal"], Role(row["answer"]["role"]))
        assert len(row["statements"]) == 30


def test_cli_rejects_bad_variant(tmp_path):
    res = CliRunner().invoke(app, ["generate", "--variant", "chaos", "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2
    flat = " ".join(res.output.replace("\u2502", " ").split())  # undo rich's box and wrapping
    assert "valid variants: original, rumormonger, lunatic, full" in flat
    assert not (tmp_path / "x.jsonl").exists()


def test_cli_show_and_evaluate(tmp_path):
    out = tmp_path / "d.jsonl"
    runner = CliRunner()
    assert runner.invoke(app, ["generate", "--n", "20", "--seed", "1", "--out", str(out)]).exit_code == 0
    first = read_jsonl(out)[0]
    res = runner.invoke(app, ["show", str(out), "--index", "0", "--answer"])
    assert res.exit_code == 0
    assert first.prompt() in res.output
    assert f"Answer: Criminal: Player {first.criminal}; Player 1 role: {first.player1_role.value}" in res.output
    res = runner.invoke(app, ["evaluate", str(out), "--solver", "exact"])
    assert res.exit_code == 0 and "exact: n=20 accuracy=1.000 criminal=1.000 role=1.000" in res.output


def test_cli_module_help_runs():
    res = subprocess.run([sys.executable, "-m", "socialgym_env.socialmaze.cli", "--help"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "generate" in res.stdout and "evaluate" in res.stdout


# --- baselines -----------------------------------------------------------------------------

def test_exact_solver_scores_everything():
    data = []
    for variant in ("original", "rumormonger", "lunatic", "full"):
        data += generate_dataset(25, 2, MazeConfig.from_preset("easy", variant))
        data += generate_dataset(10, 2, MazeConfig.from_preset("hard", variant))
    assert sum(score_answer(exact_answer(i.puzzle), i).reward for i in data) == len(data)


def test_heuristic_trusts_told_role_and_counts_accusations():
    cfg = MazeConfig(n_players=5, n_rounds=1, variant="original", n_rumormongers=0, n_lunatics=0)
    stmts = (Statement(1, 1, 2, True), Statement(1, 3, 4, True), Statement(1, 4, 3, True),
             Statement(1, 5, 4, True), Statement(1, 2, 5, False))
    assert heuristic_guess(Puzzle(cfg, I, stmts)) == (4, I)
    # tie (one accusation each) -> fewer clearances -> lower number
    tie = (Statement(1, 1, 2, True), Statement(1, 2, 3, True), Statement(1, 3, 2, False))
    assert heuristic_guess(Puzzle(cfg, I, tie)) == (3, I)
    assert heuristic_guess(Puzzle(cfg, C, tie)) == (1, C)


def _load_script(rel: str):
    spec = importlib.util.spec_from_file_location(Path(rel).stem, ROOT / rel)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_baselines_benchmark_table(capsys):
    assert _load_script("socialgym_benchmarks/studies/socialmaze_baselines.py").main(["--n", "12", "--seed", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [ln for ln in lines if ln.split()[:1] and ln.split()[0] in sm.VARIANTS]
    assert [r.split()[:2] for r in rows if r.split()[1] == "all"] == [
        [v, "all"] for v in sm.VARIANTS]
    for row in rows:
        assert row.split("|")[1].split() == ["100.0", "100.0", "100.0"], row  # exact solver
    # A Lunatic Player 1 is always misjudged by the told-role heuristic.
    lunatic_rows = [r for r in rows if r.split()[1] == "Lunatic"]
    assert lunatic_rows and all(r.split("|")[2].split()[0] == "0.0" for r in lunatic_rows)


def test_perf_script_reports_rates(capsys):
    perf = _load_script("socialgym_benchmarks/perf/socialmaze_gen.py")
    assert perf.main(["--n", "5", "--presets", "hard", "--variants", "full", "--reps", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[2] == "median [min-max] over 2 interleaved repetitions"
    cols = out[1].split()
    assert cols[:4] == ["hard", "full", "10", "5"] and int(cols[4]) >= 5
    low, high = (float(x) for x in cols[7].strip("[]").split("-"))      # inst/s range
    assert 0 < low <= float(cols[6]) <= high
