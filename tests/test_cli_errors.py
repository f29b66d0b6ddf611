"""Bad command-line input: one line naming what is valid, exit code 2, no traceback (issue 11)."""
import json

import pytest

from socialgym_env import cli


def run(capsys, *argv):
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(argv))
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


@pytest.mark.parametrize("argv,expected", [
    (("play", "nope"), "unknown game 'nope'. Valid games: avalon, bargaining"),
    (("play", "prisoners_dilemma", "--agents", "bogus"), "unknown policy spec 'bogus'; valid forms: scripted:<name>"),
    (("play", "prisoners_dilemma", "-c", "rounds=0"), "prisoners_dilemma: rounds must be at least 1, got 0"),
    (("tournament", "--games", "nope"), "unknown game 'nope'"),
    (("tournament", "--games", "prisoners_dilemma", "--agents", "scripted:random,bogus"), "unknown policy spec 'bogus'"),
    (("tournament", "--episodes", "0"), "greater than or equal to 1"),
    (("tournament", "--workers", "-1"), "greater than or equal to 1"),
    (("leaderboard", "/no/such/folder"), "no log file or folder at /no/such/folder"),
    (("leaderboard", "/no/such/folder", "--bootstrap", "0"), "greater than or equal to 1"),
    (("replay", "/no/such/log.jsonl", "--episode", "x"), "no log file at /no/such/log.jsonl"),
])
def test_bad_input_is_one_clear_line_with_exit_code_2(capsys, tmp_path, argv, expected):
    code, out, err = run(capsys, *argv, *(["--out", str(tmp_path / "out")] if argv[0] == "tournament" else []))
    text = out + err
    assert code == 2, text
    assert expected in " ".join(text.replace("│", " ").split()), text
    assert "Traceback" not in text and not (tmp_path / "out" / "logs").exists()


def test_unknown_episode_and_foreign_logs(capsys, tmp_path):
    log = tmp_path / "foreign.jsonl"
    log.write_text(json.dumps({"hello": "world"}) + "\n" + '{"schema": "other/9", "episode_id": "x"' + "\n"
                   + "[[[[not json\n", encoding="utf-8")
    code, out, err = run(capsys, "leaderboard", str(log), "--out", str(tmp_path / "board"))
    assert code == 2
    assert err.count("\n") == 1 and "no usable episode records" in err
    assert "Skipped 3 bad log lines (2 not JSON (corrupt or truncated), 1 not an episode record)" in err
    code, out, err = run(capsys, "replay", str(log), "--episode", "x")
    assert code == 2 and "episode 'x' is not in" in err


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(Exception) as raised:
        cli.main(["--debug", "leaderboard", "/no/such/folder"])
    assert isinstance(raised.value, FileNotFoundError)


def test_a_failing_episode_in_play_is_logged_with_its_reason(capsys, tmp_path):
    log = tmp_path / "play.jsonl"
    spec = "openai:m@http://127.0.0.1:9/v1?attempts=1&timeout=1"
    code, out, err = run(capsys, "play", "prisoners_dilemma", "--agents", spec, "--log", str(log))
    assert code == 1 and "episode failed: BackendError" in " ".join(out.split())
    record = json.loads(log.read_text())
    assert record["failed"] is True and "connection error" in record["error"]


def test_an_existing_output_file_is_writable_though_it_has_no_execute_bit(tmp_path):
    """A file from an earlier run (mode 644) is replaced, not refused: only a folder needs X_OK."""
    from socialgym_env.cli_errors import check_output_file
    old = tmp_path / "page.html"
    old.write_text("earlier run", encoding="utf-8")
    old.chmod(0o644)
    check_output_file(old, "--out", replaced=True)
    check_output_file(old, "--out")
