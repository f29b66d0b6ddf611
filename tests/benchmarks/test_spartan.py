"""SPaRTan: statistics, the reflection prompt, playbooks and the placebo, arming exactly one
side, a planted effect the pipeline must find (and the placebo must not), every protocol end to
end with a scripted reflector, the CLI, and resume after SIGKILL."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import socialgym_env
import spartan_helpers  # noqa: F401  (registers the follower and spartanfake policy kinds)
from socialgym_agents.runner import EpisodeJob, run_jobs
from socialgym_benchmarks.studies.spartan import parroting as parrot
from socialgym_benchmarks.studies.spartan.cli import register, run_protocol
from socialgym_benchmarks.studies.spartan.experiment import Experiment, load_config
from socialgym_benchmarks.studies.spartan.playbook import (PLACEBO_WORDS, Playbook, load_playbook, placebo_of, placebo_text,
                                         save_playbook)
from socialgym_benchmarks.studies.spartan.protocols import StopRule
from socialgym_benchmarks.studies.spartan.reflect import FunctionReflector, reflection_prompt
from socialgym_benchmarks.studies.spartan.sides import game_sides
from socialgym_benchmarks.studies.spartan.stats import delta, rate, two_proportion_test, wilson_interval
from socialgym_env.logs import iter_log_dir
from spartan_helpers import PLANTED, RecordingBackend

ROOT = Path(__file__).resolve().parents[2]
planted_reflector = FunctionReflector(lambda prompt: PLANTED, "scripted:planted")


# ----------------------------------------------------------------------------- statistics
def test_wilson_and_two_proportion_known_values():
    lo, hi = wilson_interval(5, 10)                     # textbook: 0.2366 .. 0.7634
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    lo, hi = wilson_interval(0, 30)                     # the paper's "n=30" zero cell: 0 .. 11.35%
    assert lo == 0 and round(hi, 4) == 0.1135
    z, p = two_proportion_test(45, 100, 30, 100)        # pooled z = 2.191, p = 0.0285
    assert round(z, 3) == 2.191 and round(p, 4) == 0.0285
    z, p = two_proportion_test(30, 100, 45, 100)
    assert round(z, 3) == -2.191
    assert two_proportion_test(0, 10, 0, 10) == (0.0, 1.0)
    d = delta(rate(45, 100), rate(30, 100))
    assert round(d.points, 6) == 15 and d.significant


def test_stop_rule_counts_rounds_without_improvement_against_the_best_round():
    base = {"alt": {"wins": 3, "n": 30}, "main": {"wins": 27, "n": 30}}
    same = {"alt": {"wins": 4, "n": 30}, "main": {"wins": 26, "n": 30}}
    moved = {"alt": {"wins": 20, "n": 30}, "main": {"wins": 26, "n": 30}}
    decisions = StopRule(0.05, patience=2).run([base, moved, same, moved, same])
    assert [d["improved"] for d in decisions] == [True, False, False, False]
    assert decisions[0]["sides"]["alt"]["p_value"] < 0.025 and decisions[0]["sides"]["alt"]["test"].startswith("one-sided")
    # after R1 improved, R2 (back to 4/30) and R3 (20/30 again: equal to the best, not better) are quiet
    assert [d["rounds_without_improvement"] for d in decisions] == [0, 1, 2, 3]
    assert [d["stop"] for d in decisions] == [False, False, True, True]
    assert decisions[1]["sides"]["alt"]["best_round"] == 1


def test_sides_follow_the_declared_roles():
    wolves = game_sides("werewolves")
    env = socialgym_env.make("werewolves")
    env.reset(seed=3)
    alt, main = wolves.seats(env, "alt"), wolves.seats(env, "main")
    assert sorted({env.state.seat[a].role for a in alt}) == ["Werewolf"]
    assert len(alt) == 2 and len(main) == 4 and not set(alt) & set(main)   # Seer and Witch are main
    assert game_sides("prisoners_dilemma").names == ("seat0", "seat1")
    with pytest.raises(ValueError, match="declares no sides"):
        game_sides("chess")


# ----------------------------------------------------------------------------- reflection prompt
def _pd_records(n=2):
    jobs = [EpisodeJob("prisoners_dilemma", 10 + i, ["scripted:random"] * 2) for i in range(n)]
    return run_jobs(jobs)


def test_reflection_prompt_has_trajectories_outcomes_and_no_game_numbers():
    records = _pd_records(3)
    prompt = reflection_prompt(records)
    games_part = prompt.split("Below are the full trajectories")[1].split("Write an internal monologue")[0]
    for record in records:
        names = {s["agent"]: s["name"] for s in record["roster"]}
        for turn in record["turns"]:                     # every player's every move
            assert f"{names[turn['agent']]} (player): {turn['action']}" in games_part
        for agent, outcome in record["outcomes"].items():
            assert f"{names[agent]} (role player): {outcome}, score {record['scores'][agent]}" in games_part
    assert games_part.count("=== A game of prisoners_dilemma ===") == 3
    assert not re.search(r"\bgames?\s*#?\d", games_part, re.IGNORECASE)
    assert "Write in first person" in prompt and "Do NOT reference specific game numbers" in prompt
    revised = reflection_prompt(records, prior="I should always cooperate.")
    assert "You previously wrote the following strategic playbook for yourself:\nI should always cooperate." in revised
    assert "revise your playbook" in revised


def test_hidden_moves_are_shown_with_who_saw_them():
    record = run_jobs([EpisodeJob("resistance", 4, ["scripted:random"] * 5, {"max_steps": 40})])[0]
    prompt = reflection_prompt([record])
    assert "(seen only by" in prompt                     # the spies' team message
    votes = [t for t in record["turns"] if t["phase"] == "mission"]
    assert votes and all(f": {t['action']}" in prompt for t in votes)   # secret mission cards


# ----------------------------------------------------------------------------- playbooks and placebo
def _game_words() -> set:
    words = set()
    for game in socialgym_env.game_ids():
        cls = socialgym_env.game_class(game)
        words |= set(re.findall(r"[a-z]+", " ".join([cls.info.description, cls.info.name, game,
                                                     str(cls.info.roles)]).lower()))
        env = socialgym_env.make(game)
        env.reset(seed=0)
        info = env.infos[env.agent_selection]
        words |= set(re.findall(r"[a-z]+", " ".join(info.get("action_types", []) + info.get("legal_actions", [])).lower()))
    for path in (ROOT / "socialgym_env" / "data").glob("*.json"):
        words |= set(re.findall(r"[a-z]+", path.read_text().lower()))
    return words


def test_placebo_same_length_deterministic_and_free_of_game_words():
    game_words = _game_words()
    assert not set(PLACEBO_WORDS) & game_words
    for text in (PLANTED, "x" * 3, "I should bluff as the Spy, vote with the majority. " * 40):
        playbook = Playbook("pd-R1", text)
        placebo = placebo_of(playbook)
        assert len(placebo.text) == len(text)
        assert placebo.text == placebo_of(playbook).text                  # deterministic
        assert not set(re.findall(r"[a-z]+", placebo.text.lower())) & game_words
    assert placebo_text(200, "a") != placebo_text(200, "b")


def test_playbook_files_are_versioned_with_metadata(tmp_path):
    playbook = Playbook("werewolves-R2", "I should wait.", {"round": 2, "games": ["werewolves"]})
    save_playbook(tmp_path, playbook)
    loaded = load_playbook(tmp_path, "werewolves-R2")
    assert loaded.text == "I should wait." and loaded.id == playbook.id and loaded.id.startswith("werewolves-R2@")
    meta = json.loads((tmp_path / "werewolves-R2.json").read_text())
    assert meta["round"] == 2 and meta["chars"] == 14 and meta["id"] == playbook.id
    assert Playbook("werewolves-R2", "I should act.").id != playbook.id
    (tmp_path / "werewolves-R2.md").write_text("edited")
    with pytest.raises(ValueError, match="does not match"):
        load_playbook(tmp_path, "werewolves-R2")


# ----------------------------------------------------------------------------- arming
@pytest.mark.parametrize("side", ["alt", "main"])
def test_playbook_reaches_exactly_the_armed_seats(tmp_path, side):
    RecordingBackend.prompts.clear()
    config = load_config(None, model="spartanfake:m?max_retries=0", games=["resistance"], eval_games=2,
                         overrides=["resistance.max_steps=25"], placebo=False)
    exp = Experiment(config, tmp_path, reflector=planted_reflector)
    playbook = Playbook("resistance-R1", "MY PLAYBOOK: trust no one on the second mission.")
    conds = [c for c in exp.conditions("resistance", config.model, config.model, playbook) if c.side == side]
    exp.evaluate(conds)
    records = [r for r in iter_log_dir(tmp_path / "games" / "logs") if any(s["playbook_id"] for s in r["roster"])]
    assert len(records) == 2
    team = game_sides("resistance").teams[side]
    for record in records:
        armed = {s["agent"] for s in record["roster"] if s["playbook_id"] == playbook.id}
        assert armed == {s["agent"] for s in record["roster"] if s["team"] == team}
        for seat in record["roster"]:
            chats = RecordingBackend.prompts[(record["episode_id"], seat["agent"])]
            assert chats
            if seat["agent"] in armed:
                assert all(chat[0].startswith(playbook.text) for chat in chats)
            else:
                assert not any("MY PLAYBOOK" in message for chat in chats for message in chat)


# ----------------------------------------------------------------------------- the planted effect
def test_planted_last_round_defection_is_detected_and_the_placebo_is_not(tmp_path):
    result = run_protocol("within", out=tmp_path, reflector_fn=planted_reflector, progress=False,
                          model="follower", games=["prisoners_dilemma"], rounds=3, selfplay_games=2,
                          eval_games=20, stop_rule=True, stop_patience=1)
    rows = {(r["condition"], r["round"]): r for r in result["rows"]}
    armed, placebo, base = rows[("playbook", 1)], rows[("placebo", 1)], rows[("baseline", 0)]
    assert armed["n"] == base["n"] == 40                                   # 20 games per seat, pooled
    assert armed["significant"] and armed["delta_points"] > 15
    assert not placebo["significant"] and placebo["wins"] == base["wins"]
    # R2 repeats R1's gain without improving on it: with patience 1 the stop rule ends the chain at R2
    stop = result["stop_rule"]["prisoners_dilemma"]
    assert stop["stop_round"] == 2 and stop["rounds_played"] == 2
    assert [d["stop"] for d in stop["decisions"]] == [False, True]
    assert armed["test"] == "exact McNemar (paired by seed)" or armed["test"].startswith("exact sign-flip")
    assert armed["delta_ci_low"] > 0 and armed["pairs"] == 20
    for kind in ("csv", "json", "md", "png"):
        assert Path(result["paths"][kind]).stat().st_size > 0
    selfplay = [r for r in iter_log_dir(tmp_path / "games" / "logs") if r["tags"].get("spartan") == "selfplay"]
    r1 = load_playbook(tmp_path / "playbooks", "prisoners_dilemma-R1")
    assert r1.meta["source_episode_ids"] == [r["episode_id"] for r in selfplay if r["tags"]["playbook"] is None]
    assert {s["playbook_id"] for r in selfplay if r["tags"]["playbook"] for s in r["roster"]} == {r1.id}


def test_stop_rule_is_off_by_default_and_only_reported(tmp_path):
    result = run_protocol("within", out=tmp_path, reflector_fn=planted_reflector, progress=False,
                          model="follower", games=["prisoners_dilemma"], rounds=3, selfplay_games=1,
                          eval_games=5, stop_patience=1)
    stop = result["stop_rule"]["prisoners_dilemma"]
    assert stop["rounds_played"] == 3 and stop["enforced"] is False     # the paper plays every round
    assert stop["stop_round"] in (1, 2) and "patience" in stop["rule"] or "round(s) in a row" in stop["rule"]
    assert {r["round"] for r in result["rows"]} == {0, 1, 2, 3}


# ----------------------------------------------------------------------------- the other protocols
def test_cross_multigame_and_distill_end_to_end(tmp_path):
    cross = run_protocol("cross", out=tmp_path / "cross", reflector_fn=planted_reflector, progress=False,
                         model="follower", sources=["prisoners_dilemma", "chicken"],
                         targets=["prisoners_dilemma", "chicken"], selfplay_games=1, eval_games=3)
    pairs = {(r["source"], r["game"]) for r in cross["rows"] if r["condition"] == "playbook"}
    assert pairs == {("prisoners_dilemma", "chicken"), ("chicken", "prisoners_dilemma")}
    assert Path(cross["paths"]["png"]).exists()

    multi = run_protocol("multigame", out=tmp_path / "multi", reflector_fn=planted_reflector, progress=False,
                         model="follower", sets={"pc": ["prisoners_dilemma", "chicken"]},
                         set_targets={"pc": ["prisoners_dilemma", "stag_hunt"]}, selfplay_games=2,
                         per_game_cap=1, eval_games=2)
    pc = load_playbook(tmp_path / "multi" / "playbooks", "pc-R1")
    assert pc.meta["games"] == ["chicken", "prisoners_dilemma"] and len(pc.meta["source_episode_ids"]) == 2
    split = {(r["source"], r["game"]): r["held_out"] for r in multi["rows"] if r["condition"] == "playbook"}
    assert split[("pc", "stag_hunt")] is True and split[("pc", "prisoners_dilemma")] is False
    assert ("single", "stag_hunt") in split

    distill = run_protocol("distill", out=tmp_path / "distill", reflector_fn=planted_reflector, progress=False,
                           model="scripted:tit_for_tat", students=["follower"], games=["prisoners_dilemma"],
                           selfplay_games=1, eval_games=3)
    rows = [r for r in distill["rows"] if r["condition"] == "playbook"]
    assert rows and all(r["student"] == "follower" and r["teacher"] == "scripted:tit_for_tat" for r in rows)
    armed = [r for r in iter_log_dir(tmp_path / "distill" / "games" / "logs")
             if any(s["playbook_id"] for s in r["roster"]) and r["tags"]["spartan"] == "eval"]
    for record in armed:                                 # the student holds the playbook, the teacher does not
        assert {s["policy"] for s in record["roster"] if s["playbook_id"]} == {"follower"}
        assert {s["policy"] for s in record["roster"] if not s["playbook_id"]} == {"scripted:tit_for_tat"}


# ----------------------------------------------------------------------------- parroting
def test_parroting_metrics_known_values():
    def msg(sender, text):
        return {"sender": sender, "text": text, "visibility": "public"}
    record = {"messages": [msg("a", "one two three four five six"), msg("b", "one two three four five six"),
                           msg(None, "moderator line is not talk at all here"),
                           msg("c", "completely different words in this sentence"), msg("a", "one two three four five six")]}
    result = parrot.parroting([record])
    # 5-gram Jaccard of consecutive talk: 1.0, 0.0, 0.0 -> 1/3; copies: b copies a, a copies b -> 2/4
    assert result["consecutive_jaccard"] == pytest.approx(1 / 3)
    assert result["copy_share"] == pytest.approx(0.5)
    assert parrot.parroting(_pd_records(1))["copy_share"] is None          # no talk phase


# ----------------------------------------------------------------------------- the command line
def test_cli_runs_a_protocol_and_rejects_bad_input(tmp_path):
    app = typer.Typer()
    register(app)
    (tmp_path / "pb.md").write_text(PLANTED)
    config = tmp_path / "within.toml"
    config.write_text('protocol = "within"\nmodel = "follower"\ngames = ["prisoners_dilemma"]\n'
                      'rounds = 1\nselfplay_games = 1\neval_games = 4\n')
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(app, ["spartan", "within", str(config), "--out", str(out),
                                 "--set", f"reflector=file:{tmp_path / 'pb.md'}"])
    assert result.exit_code == 0, result.output
    assert "| prisoners_dilemma | pooled |" in result.output and (out / "within.csv").exists()
    evaluate = runner.invoke(app, ["spartan", "evaluate", str(tmp_path / "pb.md"), "--game", "prisoners_dilemma",
                                   "--model", "follower", "-k", "4", "--out", str(tmp_path / "ev")])
    assert evaluate.exit_code == 0, evaluate.output
    assert (tmp_path / "ev" / "evaluate.csv").exists()
    refl = runner.invoke(app, ["spartan", "reflect", "--game", "prisoners_dilemma", "--model", "follower", "--games", "2",
                               "--rounds", "2", "--reflector", f"file:{tmp_path / 'pb.md'}", "--out", str(tmp_path / "rf")])
    assert refl.exit_code == 0, refl.output
    r1 = load_playbook(tmp_path / "rf" / "playbooks", "prisoners_dilemma-R1")
    r2 = load_playbook(tmp_path / "rf" / "playbooks", "prisoners_dilemma-R2")
    assert r2.meta["prior"] == r1.id and r2.meta["round"] == 2 and len(r2.meta["source_episode_ids"]) == 2
    bad = runner.invoke(app, ["spartan", "within", str(config), "--out", str(tmp_path / "x"), "--set", "colour=red"])
    assert bad.exit_code == 2 and "one of:" in bad.output and "Traceback" not in bad.output
    bad_game = runner.invoke(app, ["spartan", "within", str(config), "--out", str(tmp_path / "y"), "--set", "games=nope"])
    assert bad_game.exit_code == 2 and "nope" in bad_game.output
    changed = runner.invoke(app, ["spartan", "within", str(config), "--out", str(out), "--set", "eval_games=5",
                                  "--set", f"reflector=file:{tmp_path / 'pb.md'}"])
    assert changed.exit_code == 2 and "eval_games" in changed.output


# ----------------------------------------------------------------------------- resume after SIGKILL
SCRIPT = """
import sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
import spartan_helpers
from spartan_helpers import PLANTED
from socialgym_benchmarks.studies.spartan.cli import run_protocol
from socialgym_benchmarks.studies.spartan.reflect import FunctionReflector
run_protocol("within", out={out!r}, reflector_fn=FunctionReflector(lambda p: PLANTED, "scripted:planted"),
             progress=False, **{kwargs!r})
"""
KILL_RUN = dict(model="follower", games=["prisoners_dilemma"], rounds=1, selfplay_games=3, eval_games=30)


def _logged(folder):
    records = list(iter_log_dir(folder / "games" / "logs"))
    return {r["episode_id"]: (r["seed"], r["rewards"], [t["action"] for t in r["turns"]]) for r in records}, \
        Counter(r["episode_id"] for r in records)


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "killed"
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(root=str(ROOT), here=str(Path(__file__).parent), out=str(out), kwargs=KILL_RUN))
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        logs = list((out / "games" / "logs").glob("*.jsonl")) if (out / "games" / "logs").exists() else []
        if sum(p.read_bytes().count(b"\n") for p in logs) >= 12:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial, counts = _logged(out)
    assert partial and max(counts.values()) == 1

    resumed = run_protocol("within", out=out, reflector_fn=planted_reflector, progress=False, **KILL_RUN)
    clean = run_protocol("within", out=tmp_path / "clean", reflector_fn=planted_reflector, progress=False, **KILL_RUN)
    records, counts = _logged(out)
    clean_records, _ = _logged(tmp_path / "clean")
    assert set(counts.values()) == {1} and records == clean_records
    assert all(records[i] == v for i, v in partial.items())              # nothing replayed differently
    strip = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)   # noqa: E731
    assert strip(resumed["rows"]) == strip(clean["rows"])


def test_example_experiment_files_load():
    examples = sorted((ROOT / "socialgym_benchmarks" / "studies" / "spartan" / "examples").glob("*.toml"))
    assert {p.stem for p in examples} == {"within", "cross", "multigame", "distill"}
    for path in examples:
        config = load_config(path, protocol=path.stem)
        assert config.protocol == path.stem and config.model.startswith("smollm2")
    with pytest.raises(ValueError, match="run `socialgym spartan cross`"):
        load_config(ROOT / "socialgym_benchmarks" / "studies" / "spartan" / "examples" / "cross.toml", protocol="within")


def test_smollm2_reflector_writes_a_playbook_from_the_prompt(smollm2_available):
    from socialgym_benchmarks.studies.spartan.reflect import make_reflector, reflect
    reflector = make_reflector("smollm2?max_new_tokens=12")
    assert reflector.backend.config.max_new_tokens == 12 and reflector.backend.config.stop_at_json is False
    one_round = run_jobs([EpisodeJob("prisoners_dilemma", 1, ["scripted:random"] * 2, {"rounds": 1})])
    playbook = reflect(one_round, reflector, "pd-R1")        # a short prompt: the test pays the prefill
    assert playbook.text and playbook.meta["reflector"] == "smollm2?max_new_tokens=12"
    assert playbook.meta["prompt_chars"] > 500
