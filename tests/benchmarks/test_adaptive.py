"""Adaptive tournaments (socialgym_benchmarks.tournament.adaptive): the look schedule and its corrected
levels, the stop test on planted and null strengths, the allocation, the benchmark against a
round robin, and the CLI's run, resume and bad input."""
import json
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from socialgym_benchmarks.tournament import adaptive
from socialgym_benchmarks.studies import adaptive_vs_round_robin as bench
from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.tournament import plan as tour
from socialgym_benchmarks.cli import app

DECISIVE = ["scripted:constant:defect", "scripted:random", "scripted:constant:cooperate"]
ARGS = ["tournament", "--until-resolved", "--agents", ",".join(DECISIVE), "--games", "prisoners_dilemma",
        "-c", "prisoners_dilemma.rounds=3"]


def test_look_schedule_is_fixed_by_the_settings_and_ends_at_the_budget():
    totals = adaptive.look_schedule(30, 1000)
    assert totals[0] == 30 and totals[-1] == 1000 and totals == sorted(set(totals))
    assert all(b <= max(a + 1, np.ceil(a * adaptive.GROWTH)) for a, b in zip(totals, totals[1:]))
    with pytest.raises(ValueError, match="below the first round"):
        adaptive.look_schedule(30, 20)
    levels = adaptive.Levels.of(0.95, len(totals), 4)
    assert levels.ratings == pytest.approx(1 - 0.05 / len(totals))
    assert levels.pairs == pytest.approx(1 - 0.05 / (len(totals) * 6))


def two_seat_battles(planted, per_pair, seed=0):
    rng = np.random.default_rng(seed)
    episodes = []
    for a in range(len(planted)):
        for b in range(a + 1, len(planted)):
            p = 1 / (1 + 10 ** (-(planted[a] - planted[b]) / 400))
            episodes += [(a, b) if rng.random() < p else (b, a) for _ in range(per_pair)]
    return bench._battles([f"p{i}" for i in range(len(planted))], episodes)


def test_assess_resolves_planted_gaps_and_not_a_null():
    planted = two_seat_battles([1300, 1000, 700], 150)
    state = adaptive.assess(planted, 0.999)
    assert state.order == ["p0", "p1", "p2"] and state.resolved
    assert all(p.need == 0 for p in state.pairs)
    null = adaptive.assess(two_seat_battles([1000, 1000, 1000], 40, seed=1), 0.999)
    assert not null.resolved and all(p.need > 0 for p in null.pairs if not p.resolved)


def test_contrast_excludes_agrees_with_the_interval():
    battles = two_seat_battles([1150, 1000, 950, 800], 30, seed=2)
    elo = bt.fit_bt(battles.win_matrix())
    for a, b in [(0, 1), (1, 2), (2, 3), (0, 3)]:
        contrast = np.zeros(4)
        contrast[a], contrast[b] = 1.0, -1.0
        lo, hi = bt.contrast_interval(battles, contrast, elo, 0.99)
        for value in (0.0, 100.0, 300.0):
            # the interval's ends are located to PROFILE_TOL; far from them the two must agree
            if min(abs(value - lo), abs(value - hi)) > 2 * bt.PROFILE_TOL:
                assert bt.contrast_excludes(battles, contrast, elo, value, 0.99) == (not lo <= value <= hi)


def test_allocate_spreads_half_evenly_follows_need_and_skips_resolved_pairs():
    pairs = [adaptive.PairState("a", "b", 10, False, 300.0), adaptive.PairState("b", "c", 400, True, 0.0),
             adaptive.PairState("c", "d", 50, False, 100.0)]
    state = adaptive.Assessment(list("abcd"), {}, list("abcd"), pairs)
    shares = Counter(adaptive.allocate(state, 8))
    assert shares == {("a", "b"): 5, ("c", "d"): 3}          # 2 + 2 evenly, then 3 : 1 by need
    assert adaptive.allocate(state, 8) == adaptive.allocate(state, 8)
    assert Counter(adaptive.allocate(state, 1)) == {("a", "b"): 1}


def test_benchmark_adaptive_needs_far_fewer_episodes_than_the_round_robin():
    """The small version of ``python -m socialgym_benchmarks.studies.adaptive_vs_round_robin`` (3 runs
    per design: a clear gain is asserted; the documented 60-run figures are the half)."""
    table = bench.compare(bench.PLANTED["spread"], reps=3, budget=bench.BUDGETS["spread"], seed=0)
    adaptive_row, robin = table["adaptive"], table["round-robin"]
    assert adaptive_row["resolved"] == robin["resolved"] == 1.0
    assert adaptive_row["mean_episodes"] <= 0.6 * robin["mean_episodes"]
    assert adaptive_row["error"] == robin["error"] == 0.0
    assert adaptive_row["corrected_rating_coverage"] >= 0.9


def test_null_strengths_never_resolve():
    rng = np.random.default_rng(3)
    for design in bench.DESIGNS:
        run = bench.run_once([1000.0, 1000.0, 1000.0], design, 300, rng)
        assert run["episodes"] == 300 and not run["resolved"] and not run["wrong"]


def logged_ids(folder):
    return [json.loads(line)["episode_id"] for path in sorted((folder / "logs").glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def test_cli_stops_when_resolved_and_the_leaderboard_reads_its_logs(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ARGS + ["--budget", "200", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "every adjacent pair resolved" in result.output
    summary = json.loads((out / "adaptive.json").read_text())
    assert summary["stop"] == "resolved" and summary["planned"] < 200
    assert [p["upper"] for p in summary["final"]["pairs"]] == DECISIVE[:2]
    assert all(p["lo"] > 0 for p in summary["final"]["pairs"])
    ids = logged_ids(out)
    assert len(ids) == len(set(ids)) == summary["planned"]
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["episodes"] == summary["planned"] and board["policies"] == DECISIVE
    again = CliRunner().invoke(app, ARGS + ["--budget", "200", "--out", str(out)])
    assert again.exit_code == 0 and "0 played now" in again.output
    assert logged_ids(out) == ids


def test_an_interrupted_run_resumes_its_plan_without_replaying(tmp_path, monkeypatch):
    whole = tmp_path / "whole"
    adaptive.adaptive_tournament(["prisoners_dilemma"], DECISIVE, 200, out=whole, progress=False, leaderboard=False,
                                 config_overrides=["prisoners_dilemma.rounds=3"])
    real = tour.run_tournament
    calls = []

    def dies_in_round_three(jobs, out_dir, **kwargs):
        calls.append(len(jobs))
        if len(calls) == 3:             # half the round logged, then killed
            real(jobs[:len(jobs) // 2], out_dir, **kwargs)
            raise KeyboardInterrupt
        return real(jobs, out_dir, **kwargs)
    monkeypatch.setattr(tour, "run_tournament", dies_in_round_three)
    cut = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):
        adaptive.adaptive_tournament(["prisoners_dilemma"], DECISIVE, 200, out=cut, progress=False,
                                     leaderboard=False, config_overrides=["prisoners_dilemma.rounds=3"])
    monkeypatch.setattr(tour, "run_tournament", real)
    before = len(logged_ids(cut))
    resumed = adaptive.adaptive_tournament(["prisoners_dilemma"], DECISIVE, 200, out=cut, progress=False,
                                           leaderboard=False, config_overrides=["prisoners_dilemma.rounds=3"])
    assert resumed.played == resumed.planned - before
    plan = lambda folder: json.loads((folder / adaptive.PLAN_FILE).read_text())   # noqa: E731
    assert plan(cut)["rounds"] == plan(whole)["rounds"]
    assert sorted(logged_ids(cut)) == sorted(logged_ids(whole)) and len(set(logged_ids(cut))) == len(logged_ids(cut))


@pytest.mark.parametrize("extra, message", [
    (["--budget", "3"], "below the first round"),
    (["--budget", "50", "--episodes", "4"], "drop --episodes"),
    ([], "go together"),
])
def test_cli_bad_adaptive_input_is_one_line_and_exit_2(tmp_path, extra, message):
    args = ARGS + extra + ["--out", str(tmp_path / "x")]
    if not extra:
        args = [a for a in args if a != "--until-resolved"] + ["--budget", "9"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_cli_refuses_to_resume_with_other_settings(tmp_path):
    out = tmp_path / "run"
    assert CliRunner().invoke(app, ARGS + ["--budget", "200", "--out", str(out)]).exit_code == 0
    other = CliRunner().invoke(app, ARGS + ["--budget", "300", "--out", str(out)])
    assert other.exit_code == 2 and "other settings (budget)" in other.output


def test_least_played_spreads_over_every_pair_and_reads_no_outcome():
    players = ["a", "b", "c"]
    picked = adaptive.least_played(players, {("a", "b"): 4, ("a", "c"): 1}, 5)
    assert Counter(picked) == {("b", "c"): 3, ("a", "c"): 2}
    state = adaptive.Assessment(players, {}, players, [adaptive.PairState("a", "b", 10, False, 50.0),
                                                       adaptive.PairState("b", "c", 10, False, 50.0)])
    rounds = adaptive.plan_round(state, {}, 8)
    assert len(rounds) == 8 and set(rounds) == {("a", "b"), ("b", "c"), ("a", "c")}
    resolved = adaptive.Assessment(players, {}, players, [adaptive.PairState("a", "b", 10, True, 0.0)])
    assert adaptive.plan_round(resolved, {}, 8) == []
