"""SPaRTan's numbers are what they claim (issue 26): every condition counted once in every
protocol, common random numbers (a playbook-blind student's arms replay identically), the
paired test (exact McNemar / sign-flip) with a planted effect it must find and a null it must
reject at no more than the nominal rate, and the stop rule fed the paper's Table 1."""
import itertools
import json
from collections import defaultdict

import numpy as np
import pytest
from scipy.stats import binomtest

from socialgym_benchmarks.studies.spartan import report
from socialgym_benchmarks.studies.spartan.cli import run_protocol
from socialgym_benchmarks.studies.spartan.experiment import arm_of
from socialgym_benchmarks.studies.spartan.planted import KEYWORD
from socialgym_benchmarks.studies.spartan.protocols import StopRule
from socialgym_benchmarks.studies.spartan.reflect import FunctionReflector
from socialgym_benchmarks.studies.spartan.sides import game_sides
from socialgym_benchmarks.studies.spartan.stats import MCNEMAR, SIGN_FLIP, paired_delta, sign_flip_p
from socialgym_env.logs import iter_log_dir

keyword_reflector = FunctionReflector(lambda prompt: f"A pattern I noticed: cooperate early and {KEYWORD}.",
                                      "scripted:keyword")
ITERATED = ["prisoners_dilemma", "chicken", "stag_hunt"]


@pytest.fixture(autouse=True)
def no_figures(monkeypatch):
    """The figures are drawn by test_spartan.py; here they would only cost seconds per run."""
    monkeypatch.setattr(report, "FIGURES", {name: lambda rows, path: path.touch() for name in report.FIGURES})


# ----------------------------------------------------------------------------- the stop rule on Table 1
# The paper's Table 1 (GPT-5-mini within-game iterated reflection, R-armed side win %, n = 30 per
# cell), baseline R0 then R1..R4, as printed.
TABLE_1 = {"werewolves": {"alt": [23, 50, 46, 63, 46], "main": [77, 50, 54, 67, 44]},
           "spyfall": {"alt": [20, 36, 46, 26, 23], "main": [80, 80, 67, 80, 70]},
           "resistance": {"alt": [30, 23, 16, 40, 36], "main": [70, 67, 57, 54, 74]}}
PAPER_PEAK = {"werewolves": 3, "spyfall": 2, "resistance": 3}    # the caption's alt-side peaks


def _table_1_rounds(game):
    return [{side: {"wins": round(pcts[t] * 30 / 100), "n": 30} for side, pcts in TABLE_1[game].items()}
            for t in range(5)]


def _first_stop(decisions):
    return next((d["round"] for d in decisions if d["stop"]), None)


def test_stop_rule_fed_table_1_does_not_stop_before_the_papers_peak():
    for game, peak in PAPER_PEAK.items():
        alt = TABLE_1[game]["alt"]
        assert max(range(1, 5), key=lambda t: alt[t]) == peak          # the caption reads the table
        decisions = StopRule().run(_table_1_rounds(game))
        stop = _first_stop(decisions)
        assert stop is None or stop >= peak, (game, stop)
        # counts alone: the unpaired one-sided test, and it says so
        assert all(v["test"] == "one-sided two-proportion z-test (unpaired)" for d in decisions for v in d["sides"].values())
    assert [_first_stop(StopRule().run(_table_1_rounds(g))) for g in PAPER_PEAK] == [4, None, 3]
    # the check can fail: patience 2 stops Resistance at R2, before its R3 peak
    assert _first_stop(StopRule(patience=2).run(_table_1_rounds("resistance"))) == 2


# ----------------------------------------------------------------------------- the paired test
def test_sign_flip_test_is_exact_mcnemar_and_exact_for_pooled_seats():
    rng = np.random.default_rng(0)
    for _ in range(25):
        b, c = (int(x) for x in rng.integers(0, 15, 2))
        differences = [1] * b + [-1] * c + [0] * 4
        expected = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
        assert sign_flip_p(differences) == pytest.approx(expected, abs=1e-12)
    differences = [2, 1, -1, 2, 0, 1, -2]
    nonzero = [d for d in differences if d]
    observed = sum(differences)
    flips = [sum(s * d for s, d in zip(signs, nonzero)) for signs in itertools.product((1, -1), repeat=len(nonzero))]
    assert sign_flip_p(differences) == pytest.approx(np.mean([abs(f) >= abs(observed) for f in flips]))
    assert sign_flip_p(differences, "greater") == pytest.approx(np.mean([f >= observed for f in flips]))
    one_pair = paired_delta({k: (1, 0, 1) for k in range(6)})
    pooled = paired_delta({k: (2, 1, 2) for k in range(6)})
    assert one_pair.test == MCNEMAR and pooled.test == SIGN_FLIP
    assert one_pair.points == 100 and pooled.points == 50 and pooled.observations == 12
    assert "paired bootstrap over seeds" in one_pair.interval


def test_paired_test_keeps_its_level_under_the_null_and_finds_a_planted_effect():
    """Seeds differ in how winnable they are (per-seed p ~ Beta(1, 1)); the arms share the seed."""
    rng = np.random.default_rng(7)
    replications, seeds = 300, 30
    rejected = covered = found = 0
    for r in range(replications):
        p = rng.beta(1, 1, seeds)
        base = rng.random(seeds) < p
        null = rng.random(seeds) < p
        planted = rng.random(seeds) < np.minimum(1.0, p + 0.5)
        d = paired_delta({k: (int(null[k]), int(base[k]), 1) for k in range(seeds)}, seed=r)
        rejected += d.p_value < 0.05
        covered += d.lo <= 0 <= d.hi
        found += paired_delta({k: (int(planted[k]), int(base[k]), 1) for k in range(seeds)}, seed=r).p_value < 0.05
    assert rejected / replications <= 0.05 + 3 * (0.05 * 0.95 / replications) ** 0.5
    assert covered / replications >= 0.93
    assert found / replications >= 0.85


# ----------------------------------------------------------------------------- common random numbers
def _eval_records(folder):
    return [r for r in iter_log_dir(folder / "games" / "logs") if r["tags"].get("spartan") == "eval"]


def _arms_by_game(records):
    """{(game, seed, seat policies): {arm: record}}: the three arms of one evaluation game."""
    arms = defaultdict(dict)
    for record in records:
        arms[(record["game"], record["seed"], tuple(s["policy"] for s in record["roster"]))][arm_of(record)] = record
    return arms


def _moves(record):
    return [(t["agent"], t.get("action")) for t in record["turns"]], record["rewards"]


def test_arms_of_a_playbook_blind_student_replay_identically(tmp_path):
    result = run_protocol("distill", out=tmp_path, reflector_fn=keyword_reflector, progress=False,
                          model="scripted:tit_for_tat",
                          students=["scripted:random", "scripted:heuristic", "planted:keyword"],
                          games=["prisoners_dilemma", "werewolves"], selfplay_games=1, eval_games=4)
    arms = _arms_by_game(_eval_records(tmp_path))
    blind = {k: v for k, v in arms.items() if "planted:keyword" not in k[2]}
    reader = {k: v for k, v in arms.items() if "planted:keyword" in k[2] and k[0] == "prisoners_dilemma"}
    # 2 blind students x 2 games x 2 sides x 4 seeds, each game played in its 3 arms
    assert len(blind) == 2 * 2 * 2 * 4 and all(len(v) == 3 for v in blind.values())
    for game_arms in blind.values():
        assert _moves(game_arms["baseline"]) == _moves(game_arms["playbook"]) == _moves(game_arms["placebo"])
    for game_arms in reader.values():    # the reader's placebo replays its baseline; its playbook does not
        assert _moves(game_arms["baseline"]) == _moves(game_arms["placebo"])
        assert _moves(game_arms["baseline"]) != _moves(game_arms["playbook"])
    for row in result["rows"]:
        if row["condition"] != "baseline" and row["student"] != "planted:keyword":
            assert row["delta_points"] == 0 and row["p_value"] == 1.0 and row["pairs"] == 4


# ----------------------------------------------------------------------------- counting, planted effect
def _expected_n(row, k):
    return len(game_sides(row["game"]).names) * k if row["side"] == "pooled" else k


def _check_counts(rows, k):
    """One row per condition, each with n = its seeds (x pooled seats): nothing counted twice."""
    keys = [(r["game"], r["side"], r["armed_model"], r["opponent_model"], r["condition"], r["playbook_id"],
             r.get("round")) for r in rows]
    assert len(keys) == len(set(keys))
    for row in rows:
        assert row["n"] == _expected_n(row, k) and row["failed"] == 0, row
        if row["condition"] != "baseline":
            assert row["pairs"] == k


def test_every_protocol_counts_each_condition_once_and_finds_the_planted_keyword(tmp_path):
    k = 14
    common = dict(reflector_fn=keyword_reflector, progress=False, model="planted:keyword", selfplay_games=1,
                  eval_games=k)
    runs = {
        "within": run_protocol("within", out=tmp_path / "within", games=["prisoners_dilemma"], rounds=2, **common),
        "cross": run_protocol("cross", out=tmp_path / "cross", sources=ITERATED, targets=ITERATED, **common),
        "multigame": run_protocol("multigame", out=tmp_path / "multigame", sets={"pc": ITERATED[:2]},
                                  set_targets={"pc": ITERATED}, **common),
        "distill": run_protocol("distill", out=tmp_path / "distill", students=["planted:keyword", "scripted:random"],
                                games=["prisoners_dilemma", "werewolves"],
                                **dict(common, model="scripted:tit_for_tat", eval_games=k)),
    }
    for protocol, result in runs.items():
        rows = result["rows"]
        _check_counts(rows, k)
        baselines = [r for r in rows if r["condition"] == "baseline"]
        # each target's baseline is one row however many playbooks aim at it
        assert len(baselines) == len({(r["game"], r["side"], r["armed_model"]) for r in baselines}), protocol
        for row in rows:
            if row["armed_model"] != "planted:keyword" or row["condition"] == "baseline" or row["game"] == "werewolves":
                continue
            if row["condition"] == "playbook":                 # the keyword: defect in the last round
                assert row["significant"] and row["delta_points"] > 20 and row["delta_ci_low"] > 0, (protocol, row)
            else:                                              # the placebo has no keyword: identical replays
                assert row["delta_points"] == 0 and row["p_value"] == 1.0, (protocol, row)
    # the cross protocol's 3 sources aim 2 playbooks at each target: still K baseline games per target
    cross_logs = _eval_records(tmp_path / "cross")
    for game in ITERATED:
        baseline_games = {r["episode_id"] for r in cross_logs if r["game"] == game and arm_of(r) == "baseline"}
        assert len(baseline_games) == k
    # rerun from the logs: nothing replayed, the same counts
    again = run_protocol("cross", out=tmp_path / "cross", sources=ITERATED, targets=ITERATED, **common)
    assert [(r["n"], r["wins"]) for r in again["rows"]] == [(r["n"], r["wins"]) for r in runs["cross"]["rows"]]
    assert len(_eval_records(tmp_path / "cross")) == len(cross_logs)


def test_a_blind_and_a_noise_student_show_no_effect_beyond_the_nominal_rate(tmp_path):
    """Repeated experiment seeds: the blind student never differs between arms; the noise
    student (a different but equally distributed stream per arm) is rejected at most at about
    the nominal 5% (the benchmark script spartan_null_rate.py runs many more)."""
    playbook = tmp_path / "keyword.md"
    playbook.write_text(f"Cooperate early and {KEYWORD}.", encoding="utf-8")
    rejections = {"scripted:heuristic": 0, "planted:noise": 0}
    tests, repeats = set(), 8
    for seed in range(repeats):
        result = run_protocol("distill", out=tmp_path / f"s{seed}", progress=False, model="scripted:tit_for_tat",
                              students=list(rejections), games=["prisoners_dilemma"], playbook=str(playbook),
                              eval_games=10, seed=seed)
        for row in result["rows"]:
            if row["condition"] != "baseline":
                rejections[row["student"]] += row["p_value"] < 0.05
                tests.add(row["test"])
    assert rejections["scripted:heuristic"] == 0
    # 2 arms x 8 seeds = 16 tests: P(Bin(16, 0.05) >= 4) < 0.01
    assert rejections["planted:noise"] <= 3
    assert tests == {SIGN_FLIP}


@pytest.mark.parametrize("protocol, settings", [
    ("within", {"games": ["prisoners_dilemma"], "rounds": 2}),
    ("cross", {"sources": ITERATED[:2], "targets": ITERATED[:2]}),
    ("multigame", {"sets": {"pc": ITERATED[:2]}}),
])
def test_a_blind_student_shows_no_effect_in_the_self_play_protocols(tmp_path, protocol, settings):
    """The self-play protocols arm the model itself: with a playbook-blind model every arm of
    every seed replays its baseline, so no row is ever rejected (seeds 0 and 1)."""
    for seed in (0, 1):
        result = run_protocol(protocol, out=tmp_path / f"s{seed}", reflector_fn=keyword_reflector, progress=False,
                              model="scripted:heuristic", selfplay_games=1, eval_games=4, seed=seed, **settings)
        armed = [r for r in result["rows"] if r["condition"] != "baseline"]
        assert armed and all(r["delta_points"] == 0 and r["p_value"] == 1.0 for r in armed)


def test_a_run_folder_from_before_seat_seeds_is_not_resumed(tmp_path):
    from socialgym_benchmarks.studies.spartan.experiment import Experiment, load_config
    config = load_config(None, (), protocol="within", model="planted:keyword")
    (tmp_path / "experiment.json").write_text(json.dumps(config.to_dict()))     # no seat_seeds marker
    with pytest.raises(ValueError, match="seat_seeds"):
        Experiment(config, tmp_path)
    Experiment(config, tmp_path / "fresh")
    assert Experiment(config, tmp_path / "fresh").config == config                # resuming a new folder is fine
