"""``socialgym analyze`` on a small hand-written study (tests/data/triadic_study: 4 finished
episodes of a 5-seat roster -- Ann, Bo Werewolves; Cy Doctor; Di Villager; Ed Jester -- two OFF
and two ON, plus a failed episode and another game's episode that must be ignored, and one
lessons file). Every expected count below is worked out by hand from that file."""
from pathlib import Path

import pytest

from socialgym_benchmarks.ratings import wilson_interval
from socialgym_benchmarks.studies.triadic import analysis
from socialgym_benchmarks.studies.triadic.tom import tag_categories, tom_order

DATA = Path(__file__).resolve().parents[1] / "data" / "triadic_study"


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return analysis.analyze(DATA, tmp_path_factory.mktemp("analysis"))


def pick(rows, **match):
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_reads_finished_episodes_of_the_game_only(result):
    assert result["episodes"] == 4 and result["skipped"] == 1 and result["lessons"] == 4


def test_win_rates_by_faction_with_wilson_intervals(result):
    rows = result["tables"]["win_rates"]
    expected = {("OFF", "jester"): 1, ("OFF", "village"): 1, ("OFF", "werewolves"): 0,
                ("ON", "jester"): 1, ("ON", "village"): 0, ("ON", "werewolves"): 1, ("ON", "draw"): 0}
    for (condition, faction), wins in expected.items():
        row = pick(rows, model="m", condition=condition, faction=faction)
        assert (row["wins"], row["games"]) == (wins, 2)
        assert row["ci_low"] == pytest.approx(wilson_interval(wins, 2)[0], abs=1e-9)
        assert row["ci_high"] == pytest.approx(wilson_interval(wins, 2)[1], abs=1e-9)


def test_suspicion_matrix_and_on_minus_off(result):
    matrix = result["tables"]["suspicion_matrix"]
    ww_j_off = pick(matrix, condition="OFF", observer_role="Werewolf", target_role="Jester")
    assert ww_j_off["mean_suspicion"] == pytest.approx(0.7) and ww_j_off["n"] == 2
    ww_j_on = pick(matrix, condition="ON", observer_role="Werewolf", target_role="Jester")
    assert ww_j_on["mean_suspicion"] == pytest.approx(0.525) and ww_j_on["n"] == 4
    assert pick(matrix, condition="OFF", observer_role="Werewolf", target_role="Doctor")["mean_suspicion"] == pytest.approx(0.9)
    diff = {(r["observer_role"], r["target_role"]): r["diff"] for r in result["tables"]["suspicion_diff"]}
    assert diff == pytest.approx({("Werewolf", "Jester"): -0.175, ("Doctor", "Jester"): 0.55,
                                  ("Villager", "Jester"): 0.8})


def test_deception_type_counts_per_role(result):
    rows = [r for r in result["tables"]["deception_types"] if r["count"]]
    got = {(r["condition"], r["role"], r["type"]): r["count"] for r in rows}
    assert got == {("OFF", "Jester", "fabrication"): 1, ("OFF", "Werewolf", "none"): 1, ("OFF", "Doctor", "none"): 1,
                   ("ON", "Jester", "misdirection"): 1, ("ON", "Jester", "fabrication"): 1}


def test_tom_orders_of_utterances_and_lessons(result):
    rows = result["tables"]["tom_orders"]
    on_jester = {r["order"]: r["count"] for r in rows if (r["source"], r["condition"], r["group"]) == ("utterance", "ON", "Jester")}
    assert on_jester == {1: 1, 2: 1, 3: 1}
    assert pick(rows, source="utterance", condition="OFF", group="Doctor", order=2)["share"] == 1.0
    assert pick(rows, source="lesson", group="to_do", order=3)["count"] == 1
    assert pick(rows, source="lesson", group="to_do", order=1)["share"] == 0.5
    assert pick(rows, source="lesson", group="to_not_do", order=2)["count"] == 1
    cats = {r["category"]: r["count"] for r in result["tables"]["lesson_categories"]}
    assert cats["wolf_mimicry"] == 2 and cats["questioning"] == 1 and cats["meta_modeling"] == 0


def test_fingerprints(result):
    rows = result["tables"]["fingerprints"]
    expected = {("OFF", "day1_wolf_vote_jester"): 1, ("ON", "day1_wolf_vote_jester"): 2,
                ("OFF", "day1_wolf_revote_jester"): 1, ("ON", "day1_wolf_revote_jester"): 1,
                ("OFF", "jester_killed_at_night"): 1, ("ON", "jester_killed_at_night"): 0}
    for (condition, behaviour), k in expected.items():
        row = pick(rows, condition=condition, behaviour=behaviour)
        assert (row["games_with"], row["games"]) == (k, 2)


def test_calibration_gap(result):
    rows = result["tables"]["calibration"]
    jester_on = pick(rows, condition="ON", role="Jester")
    assert jester_on["statements"] == 2      # the unlabelled statement is not counted
    assert jester_on["self_rate"] == 1.0 and jester_on["mean_confidence"] == pytest.approx(0.65)
    assert jester_on["calib_gap"] == pytest.approx(2 / 3 - 1)
    doctor_off = pick(rows, condition="OFF", role="Doctor")
    assert doctor_off["calib_gap"] == pytest.approx(2 / 3)


def test_writes_every_csv_and_png(result):
    names = {Path(f).name for f in result["files"]}
    for stem in ("win_rates", "suspicion_matrix", "suspicion_diff", "deception_types", "tom_orders", "calibration"):
        assert {f"{stem}.csv", f"{stem}.png"} <= names
    assert {"fingerprints.csv", "lesson_categories.csv", "failure_modes.csv"} <= names
    for f in result["files"]:
        assert Path(f).stat().st_size > 0
    header = Path(next(f for f in result["files"] if f.endswith("win_rates.csv"))).read_text().splitlines()[0]
    assert header == "model,condition,faction,wins,games,rate,ci_low,ci_high"


@pytest.mark.parametrize("text, order", [
    ("Bid high on day 1.", 1),
    ("Make me look guilty", 2),
    ("I think I'm the odd one", 2),           # the seed's ’ pattern also matches a plain apostrophe
    ("Seem wolf-like without appearing villager-aligned", 3),
    ("Act like a wolf rather than a villager", 3),
])
def test_tom_order_rules(text, order):
    assert tom_order(text) == order


def test_strategy_categories_are_multi_label():
    assert tag_categories("Don't over-defend; let the vote bandwagon build") == \
        ["wolf_mimicry", "passive_provocation", "anti_jester_tells", "vote_manipulation"]


def test_failure_modes(result):
    rows = {r["condition"]: r for r in result["tables"]["failure_modes"]}
    # e1: Jester exiled with Bo (a Werewolf) voting for it; e2: Jester killed at night, village won;
    # e3: Werewolves won; e4: Jester exiled with both Werewolves' votes.
    assert {k: rows["OFF"][k] for k in ("A", "B", "C", "D", "W")} == {"A": 1, "B": 1, "C": 0, "D": 0, "W": 0}
    assert {k: rows["ON"][k] for k in ("A", "B", "C", "D", "W")} == {"A": 1, "B": 0, "C": 0, "D": 0, "W": 1}


def test_failure_mode_c_and_d():
    episodes, _ = analysis.load_episodes(DATA)
    e4 = next(r for r in episodes if r["episode_id"] == "e4")
    e2 = next(r for r in episodes if r["episode_id"] == "e2")
    c = {**e4, "metrics": {**e4["metrics"], "vote_log": [{"day": 1, "kind": "revote",
                                                           "votes": {"p0": "p3", "p1": "p3", "p2": "p4", "p3": "p4"}}]}}
    d = {**e2, "metrics": {**e2["metrics"], "death_log": [{"day": 1, "agent": "p0"}]}}
    assert (analysis.failure_mode(c), analysis.failure_mode(d)) == ("C", "D")


def test_failure_mode_a_is_day_1_only():
    episodes, _ = analysis.load_episodes(DATA)
    e1 = next(r for r in episodes if r["episode_id"] == "e1")          # A: exiled on day 1, a Werewolf voting
    assert analysis.failure_mode(e1) == "A"
    metrics = e1["metrics"]
    later = {**e1, "metrics": {**metrics, "exile_log": [{**e, "day": 2} for e in metrics["exile_log"]],
                               "vote_log": [{**b, "day": 2} for b in metrics["vote_log"]]}}
    assert analysis.failure_mode(later) == "A_late"
