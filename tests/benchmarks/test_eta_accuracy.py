"""socialgym_benchmarks/perf/eta_accuracy.py: it records what the bar's estimate is given and
scores the ETA against the time really left (issue 45 item 5)."""
import json

import pytest

from socialgym_benchmarks.perf import eta_accuracy


def _write(path, events):
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


def _steady_stream(path, prior):
    """One 400-turn coup episode, a turn every 0.1 s, then nothing: the time left at t is 40 - t."""
    events = [{"t": 0.0, "planned": {"coup-0": ["coup", 1.0]}, "prior_turns": prior},
              {"t": 0.0, "tick": [["coup", 0, 0, "coup-0"]], "decisions": 0}]
    for turn in range(1, 400):
        events.append({"t": turn / 10, "tick": [["coup", turn, turn, "coup-0"]], "decisions": turn})
    events.append({"t": 40.0, "finished": ["coup", 400, "coup-0"]})
    _write(path, events)


def test_a_true_prior_scores_every_point_close_and_a_false_one_does_not(tmp_path):
    stream = tmp_path / "s.jsonl"
    _steady_stream(stream, {"coup": 400})
    true = eta_accuracy.score(stream)
    assert true["points"] == eta_accuracy.POINTS - 1 and true["run_s"] == 40
    assert [left for _, left, _, _ in true["rows"]] == pytest.approx([40 - 2 * k for k in range(1, 20)])
    # exact but for the status line's lag of one tick, until the episode passes IN_PLAY_CAP of its turns
    assert true["within"][0.25] >= 17 and true["median_factor"] == pytest.approx(1.0, abs=0.05)
    _steady_stream(stream, {"coup": 100})      # planted: a prior four times too short
    false = eta_accuracy.score(stream)
    assert false["median_factor"] > 2 and false["within"][0.25] < true["within"][0.25] / 4
    assert eta_accuracy.score(stream, use_prior=False)["shown"] == 0     # no prior, no episode ended


def test_points_sets_how_finely_the_run_is_scored(tmp_path):
    stream = tmp_path / "s.jsonl"
    _steady_stream(stream, {"coup": 400})
    fine = eta_accuracy.score(stream, points=200)
    assert fine["points"] == 199
    assert [left for _, left, _, _ in fine["rows"]][:3] == pytest.approx([39.8, 39.6, 39.4])


def test_an_empty_or_tickless_stream_says_why(tmp_path):
    stream = tmp_path / "s.jsonl"
    stream.write_text("")
    with pytest.raises(SystemExit, match="--workers 1"):
        eta_accuracy.score(stream)
    _write(stream, [{"t": 0.0, "planned": {}, "prior_turns": {}}])
    with pytest.raises(SystemExit, match="no tick"):
        eta_accuracy.score(stream)


def test_it_records_a_tournament_and_scores_it(tmp_path, capsys):
    stream = tmp_path / "s.jsonl"
    eta_accuracy.main(["--record", str(stream), "--", "tournament", "--games", "prisoners_dilemma,coup",
                       "--agents", "scripted:random,scripted:heuristic", "--episodes", "2", "--workers", "1",
                       "--bootstrap", "10", "--out", str(tmp_path / "t")])
    events = [json.loads(line) for line in stream.read_text().splitlines()]
    planned = events[0]["planned"]
    finished = [event["finished"][2] for event in events if "finished" in event]
    assert sorted(finished) == sorted(planned) and set(events[0]["prior_turns"]) == {"prisoners_dilemma", "coup"}
    assert "an ETA at" in capsys.readouterr().out
