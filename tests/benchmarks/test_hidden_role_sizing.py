"""The hidden-role sizing study (issue 63 item 1): its sample-size function against a simulation
of the test it sizes, its resume in pieces, and its seating (scripted seats only)."""
from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest

from socialgym_benchmarks.studies import hidden_role_sizing as hrs
from socialgym_env.logs import read_episodes

STAND_IN = "scripted:random"       # the "model" arm in these tests: a spec other than the heuristic


def test_critical_counts_are_where_scipys_exact_test_rejects():
    counts = list(range(1, 41))
    crit = {alpha: hrs.critical_counts(counts, alpha) for alpha in (0.01, 0.05)}
    for i, d in enumerate(counts):
        p_values = [binomtest(k, d, 0.5).pvalue for k in range(d + 1)]
        for alpha, c in crit.items():
            assert [k for k, p in enumerate(p_values) if p <= alpha] == \
                [k for k in range(d + 1) if min(k, d - k) <= c[i]], (alpha, d)


@pytest.mark.parametrize("p0, ph", [(0.3, 0.9), (0.1, 0.5)])
def test_sample_size_reaches_the_power_it_promises_in_simulation(p0, ph):
    p1 = p0 + hrs.EFFECT_SHARE * (ph - p0)
    n = hrs.paired_sample_size(p0, p1)
    assert n is not None and hrs.mcnemar_power(n, p0, p1) >= hrs.POWER > hrs.mcnemar_power(n - 1, p0, p1)
    simulated = hrs.simulated_power(n, p0, p1, reps=3000, seed=1)
    assert abs(simulated - hrs.POWER) < 0.035, (n, simulated)          # about 4 standard errors
    # a planted effect at half that many deals is clearly underpowered
    assert hrs.simulated_power(n // 2, p0, p1, reps=1000, seed=2) < 0.7


def test_exact_power_agrees_with_simulation_off_the_target():
    for n, p0, p1 in ((40, 0.2, 0.6), (150, 0.45, 0.6)):
        exact = hrs.mcnemar_power(n, p0, p1)
        assert abs(hrs.simulated_power(n, p0, p1, reps=3000, seed=3) - exact) < 0.035, (n, exact)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_null_rejects_at_most_alpha(p):
    assert hrs.mcnemar_power(300, p, p) <= hrs.ALPHA / 2
    rate = hrs.simulated_power(300, p, p, reps=4000, seed=4, either_way=True)
    assert rate <= hrs.ALPHA + 3 * (hrs.ALPHA / 4000) ** 0.5


def test_no_gap_or_an_unreachable_gap_gives_no_size():
    assert hrs.paired_sample_size(0.5, 0.5) is None
    assert hrs.paired_sample_size(0.5, 0.4) is None
    assert hrs.paired_sample_size(0.5, 0.52, max_pairs=1000) is None


def test_clopper_pearson_is_exact_and_covers_the_extremes():
    assert hrs.clopper_pearson(0, 10)[0] == 0.0 and hrs.clopper_pearson(10, 10)[1] == 1.0
    lo, hi = hrs.clopper_pearson(3, 10)
    assert lo == pytest.approx(0.0667, abs=1e-3) and hi == pytest.approx(0.6525, abs=1e-3)


def _keys(sides, episodes=3):
    return [hrs.piece_key(g, s, arm, STAND_IN, episodes, 0) for g, s in sides for arm in hrs.ARMS]


class Killed(Exception):
    pass


def test_a_killed_run_resumes_without_replaying_done_pieces(tmp_path):
    sides = [("spyfall", "spy"), ("chameleon", "citizens")]
    keys = _keys(sides)
    played = []

    def play_then_die(key, pool, logs, limit):
        if len(played) == limit:
            raise Killed
        played.append((key["game"], key["side"], key["arm"]))
        return hrs.play_piece(key, pool, logs)

    with pytest.raises(Killed):
        hrs.run_pieces(tmp_path, keys, hrs.PolicyPool(), play=lambda *a: play_then_die(*a, limit=3), say=lambda s: None)
    assert len(played) == 3
    first = list(played)
    pieces = hrs.run_pieces(tmp_path, keys, hrs.PolicyPool(), play=lambda *a: play_then_die(*a, limit=99),
                            say=lambda s: None)
    assert played[3:] == [(k["game"], k["side"], k["arm"]) for k in keys[3:]] and played[:3] == first
    lines = (tmp_path / "pieces.jsonl").read_text().splitlines()
    assert len(lines) == len(keys) == len(pieces)
    for log in (tmp_path / "episodes").iterdir():
        ids = [r["episode_id"] for r in read_episodes(log)]
        assert len(ids) == len(set(ids)) == 3, log


def test_a_killed_piece_resumes_after_its_logged_episodes(tmp_path):
    key = hrs.piece_key("werewolves", "werewolves", "model", STAND_IN, 4, 0)
    jobs = hrs.piece_jobs(key["game"], key["side"], key["spec"], key["seeds"], key["config"])
    log = tmp_path / "episodes" / "werewolves.werewolves.model.jsonl"
    hrs.run_jobs(jobs[:2], hrs.PolicyPool(), log_path=log)           # the two episodes a killed piece left
    with open(log, "ab") as handle:
        handle.write(b'{"episode_id": "torn')                        # and the one it was writing
    piece = hrs.play_piece(key, hrs.PolicyPool(), tmp_path / "episodes")
    assert piece["played"] == 2 and sorted(piece["outcomes"]) == ["0", "1", "2", "3"] and not piece["failed"]
    assert len(list(read_episodes(log))) == 4


def test_a_piece_written_twice_counts_once(tmp_path):
    sides = [("insider", "insider")]
    pieces = hrs.run_pieces(tmp_path, _keys(sides, 5), hrs.PolicyPool(), say=lambda s: None)
    before = hrs.table(pieces, sides, STAND_IN, 5, 0, 8.0)["rows"][sides[0]]
    path = tmp_path / "pieces.jsonl"
    path.write_text(path.read_text() * 2)
    again = hrs.read_pieces(path)
    assert len(again) == 2
    after = hrs.table(again, sides, STAND_IN, 5, 0, 8.0)["rows"][sides[0]]
    assert after["model"] == before["model"] and after["heuristic"] == before["heuristic"]
    assert after["model"][1] == 5


@pytest.mark.parametrize("game, side", [(g, s) for g, ss in hrs.SIDES.items() for s in ss])
def test_each_arm_sits_exactly_on_its_side(tmp_path, game, side):
    key = hrs.piece_key(game, side, "model", STAND_IN, 2, 0)
    piece = hrs.play_piece(key, hrs.PolicyPool(), tmp_path)
    assert not piece["failed"]
    records = list(read_episodes(tmp_path / f"{game}.{side}.model.jsonl"))
    assert len(records) == 2
    for record in records:
        on_side = {s["agent"] for s in record["roster"] if s["team"] == side}
        as_arm = {s["agent"] for s in record["roster"] if s["policy"] == STAND_IN}
        assert on_side and as_arm == on_side, (record["episode_id"], record["roster"])
        won, decisions = hrs.episode_outcome(record, side)
        assert won == int(bool(on_side & set(record["winners"])))
        assert decisions == sum(t["agent"] in on_side for t in record["turns"]) > 0


def test_table_marks_the_cheapest_side_that_fits():
    def piece(wins, episodes=20, seconds=60.0):
        return {"outcomes": {str(i): (int(i < wins), 3) for i in range(episodes)}, "played": episodes,
                "seconds": seconds}
    pieces = {}
    for game, side, model_wins, heuristic_wins, seconds in (("spyfall", "spy", 2, 16, 60.0),
                                                            ("insider", "insider", 2, 16, 60000.0),
                                                            ("chameleon", "chameleon", 10, 10, 60.0)):
        for arm, wins in (("model", model_wins), ("heuristic", heuristic_wins)):
            key = hrs.piece_key(game, side, arm, STAND_IN, 20, 0)
            pieces[hrs._key_text(key)] = dict(key, **piece(wins, seconds=seconds))
    sides = [("spyfall", "spy"), ("insider", "insider"), ("chameleon", "chameleon")]
    result = hrs.table(pieces, sides, STAND_IN, 20, 0, budget_hours=8.0)
    rows = result["rows"]
    assert rows[sides[0]]["per_minute"] == pytest.approx(20.0) and rows[sides[0]]["fits"]
    assert rows[sides[1]]["pairs"] == rows[sides[0]]["pairs"] and not rows[sides[1]]["fits"]   # 1000x slower
    assert rows[sides[2]]["pairs"] is None                                                     # no gap
    assert result["chosen"] == sides[0]
    text = hrs.markdown(result, 8.0)
    assert "**chosen**" in text and "no gap" in text


def test_the_choice_prefers_a_side_that_fits_even_at_the_intervals_ends():
    def piece(wins, seconds):
        return {"outcomes": {str(i): (int(i < wins), 3) for i in range(12)}, "played": 12, "seconds": seconds}
    pieces = {}
    # spyfall: cheap, but 0/12 against 4/12 leaves no gap between the intervals' inner ends;
    # chameleon: six times slower, 0/12 against 12/12 has a gap even there
    for game, side, heuristic_wins, seconds in (("spyfall", "spy", 4, 60.0), ("chameleon", "chameleon", 12, 360.0)):
        for arm, wins in (("model", 0), ("heuristic", heuristic_wins)):
            key = hrs.piece_key(game, side, arm, STAND_IN, 12, 0)
            pieces[hrs._key_text(key)] = dict(key, **piece(wins, seconds))
    sides = [("spyfall", "spy"), ("chameleon", "chameleon")]
    result = hrs.table(pieces, sides, STAND_IN, 12, 0, budget_hours=8.0)
    spy, chameleon = result["rows"][sides[0]], result["rows"][sides[1]]
    assert spy["fits"] and spy["minutes_per_arm"] < chameleon["minutes_per_arm"]
    assert spy["pairs_cautious"] is None and chameleon["pairs_cautious"] > chameleon["pairs"]
    assert result["chosen"] == sides[1]


@pytest.mark.parametrize("argv", [["--games", "chess"], ["--sides", "werewolves:jester"], ["--episodes", "0"],
                                  ["--model", "nosuchbackend:x"], ["--arms", "trained"]])
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        hrs.parse_args(argv)
    assert exit_info.value.code == 2
    assert len([line for line in capsys.readouterr().err.splitlines() if line.startswith("hidden_role_sizing") or "error" in line]) >= 1


def test_report_reads_what_is_there_without_playing(tmp_path, capsys):
    hrs.run_pieces(tmp_path, _keys([("spyfall", "spy")], 3), hrs.PolicyPool(), say=lambda s: None)
    result = hrs.main(["--out", str(tmp_path), "--sides", "spyfall:spy", "--episodes", "3", "--model", STAND_IN,
                       "--report"])
    assert result["rows"][("spyfall", "spy")]["model"][1] == 3
    out = capsys.readouterr().out
    assert "host:" in out and "| spyfall | spy |" in out
    assert json.loads((tmp_path / "pieces.jsonl").read_text().splitlines()[0])["game"] == "spyfall"


def test_arms_heuristic_plays_only_the_ceiling(tmp_path, capsys):
    result = hrs.main(["--out", str(tmp_path), "--sides", "spyfall:spy,insider:commons", "--episodes", "2",
                       "--model", STAND_IN, "--arms", "heuristic"])
    pieces = [json.loads(line) for line in (tmp_path / "pieces.jsonl").read_text().splitlines()]
    assert [(p["game"], p["arm"]) for p in pieces] == [("spyfall", "heuristic"), ("insider", "heuristic")]
    row = result["rows"][("insider", "commons")]
    assert "model" not in row and row["heuristic"][1] == 2 and row["heuristic_decisions"] > 0
