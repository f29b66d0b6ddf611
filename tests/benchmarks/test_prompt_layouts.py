"""The paired comparison of prompt templates (socialgym_benchmarks.studies.prompt_layouts): common
random numbers in the plan, pairing in the estimate, and the estimator's planted-effect and null
checks on simulated outcomes."""
import numpy as np
import pytest

from socialgym_benchmarks.studies import prompt_layouts as study

MODEL = "smollm2?temperature=0.7"


def test_each_model_episode_is_planned_once_per_arm_with_the_same_seed_seats_and_opponents():
    jobs = study.paired_jobs(["prisoners_dilemma", "werewolves"], MODEL)
    specs = study.arm_specs(MODEL)
    assert specs == {"paper": MODEL, "compact": MODEL + "&template=compact"}
    by_unit = {}
    for job in jobs:
        assert study.PLACEHOLDER not in job.seats
        by_unit.setdefault(job.tags.get("unit", job.episode_id), []).append(job)
    model_units = [group for group in by_unit.values() if len(group) == 2]
    assert model_units and all(len(group) in (1, 2) for group in by_unit.values())
    for paper, compact in model_units:
        assert (paper.tags["arm"], compact.tags["arm"]) == ("paper", "compact")
        assert paper.seed == compact.seed and paper.config == compact.config
        assert [specs["compact"] if s == MODEL else s for s in paper.seats] == compact.seats
        assert paper.episode_id == "paper|" + paper.tags["unit"]
    scripted = [group[0] for group in by_unit.values() if len(group) == 1]
    assert scripted and all(set(job.seats) <= set(study.OPPONENTS) for job in scripted)
    # the seeds do not depend on the model's spec: another model, the same deals
    other = study.paired_jobs(["prisoners_dilemma", "werewolves"], "smollm2?temperature=1.0")
    assert [j.seed for j in other] == [j.seed for j in jobs]


def test_a_spec_that_sets_the_template_already_is_refused(capsys):
    with pytest.raises(ValueError, match="sets template= already"):
        study.arm_specs("smollm2?template=compact")
    assert study.main(["compare", "--model", "smollm2?template=paper"]) == 2
    assert "error:" in capsys.readouterr().err


def test_a_unit_one_arm_did_not_finish_counts_for_neither():
    records = study.simulated_records(np.random.default_rng(0), 4, 0.0, scripted_units=2)
    dropped = [r for r in records if r["episode_id"] != "compact|u1"]
    kept, units = study.paired_units(dropped)
    ids = {r["episode_id"] for r in kept}
    assert "paper|u1" not in ids and {"paper|u0", "compact|u0", "s0", "s1"} <= ids
    assert len(set(units)) == 5                     # 3 paired units + 2 scripted ones
    assert units[[r["episode_id"] for r in kept].index("paper|u0")] == \
        units[[r["episode_id"] for r in kept].index("compact|u0")]


def test_the_estimate_recovers_a_planted_drop():
    row = study.check(-150.0, reps=12, units=300, n_boot=200, seed=1)
    assert -190 < row["mean_estimate"] < -110
    assert row["excludes_zero"] >= 0.75 and row["coverage"] >= 0.75


def test_under_the_null_the_interval_covers_zero():
    row = study.check(0.0, reps=12, units=300, n_boot=200, seed=2)
    assert abs(row["mean_estimate"]) < 30
    assert row["excludes_zero"] <= 0.25


def test_the_bootstrap_moves_the_two_arms_of_a_unit_together():
    # identical outcomes in both arms (full coupling, no planted effect): every resample keeps
    # them identical, so the difference is 0 with no spread; unpaired resampling would spread it
    records = study.simulated_records(np.random.default_rng(3), 200, 0.0, coupling=1.0, scripted_units=20)
    result = study.paired_difference(records, "arm:paper", "arm:compact", n_boot=300)
    assert result["difference"] == pytest.approx(0.0, abs=0.01)
    assert result["lo"] == pytest.approx(0.0, abs=0.01) and result["hi"] == pytest.approx(0.0, abs=0.01)
    assert result["discordant"] == 0
    loose = study.simulated_records(np.random.default_rng(3), 200, 0.0, coupling=0.0, scripted_units=20)
    assert study.paired_difference(loose, "arm:paper", "arm:compact", n_boot=50)["discordant"] > 20


def test_sizing_is_the_inverse_of_the_detectable_drop():
    needed = study.battles_needed(50.0)
    assert study.detectable_drop(needed) <= 50.0 < study.detectable_drop(needed - 5)
    assert study.battles_needed(50.0, correlation=0.5) < needed


def _two_seat(i, winner, loser):
    return {"episode_id": f"e{i}", "game": "prisoners_dilemma", "rewards": {"a": 1.0, "b": -1.0},
            "roster": [{"agent": "a", "policy": winner}, {"agent": "b", "policy": loser}]}


def test_the_adaptive_look_at_a_round_robins_size_says_which_pairs_are_open():
    from socialgym_benchmarks.studies.adaptive_demo import round_robin_look
    rng = np.random.default_rng(0)
    records = []
    pairs = [("strong", "middle", 0.9), ("strong", "weak", 0.9), ("middle", "weak", 0.5)]
    for i in range(180):           # strong beats both others 90%; middle and weak even
        a, b, p = pairs[i % 3]
        records.append(_two_seat(i, *((a, b) if rng.random() < p else (b, a))))
    look = round_robin_look(records)
    assert look["episodes"] == 180 and look["looks"] > 1 and look["pair_level"] > 0.99
    top, bottom = look["pairs"]
    assert top["upper"] == "strong" and top["resolved"]          # the even pair may come either way round
    assert {bottom["upper"], bottom["lower"]} == {"middle", "weak"} and not bottom["resolved"] and bottom["need"] > 0


def test_the_adaptive_look_refuses_a_missing_folder(tmp_path, capsys):
    from socialgym_benchmarks.studies import adaptive_demo
    assert adaptive_demo.main([str(tmp_path / "missing")]) == 2
    assert "no such log folder" in capsys.readouterr().err
