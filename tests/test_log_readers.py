"""Every reader of logs counts each episode once (issue 65.2): the same episodes in two files of one
logs folder once doubled every count of the leaderboard (16 episodes a policy instead of 8) and
narrowed its intervals. A copy is dropped and said in one line; a conflicting copy (one id, other
content) is an error naming both files. (Pipes and devices as logs: the bad-input table.)"""
import ast
import json
import shutil
from pathlib import Path

import pytest

from socialgym_agents.runner import EpisodeJob, run_jobs
from socialgym_benchmarks.ratings import load_records, skipped_note
from socialgym_env.errors import LogFormatError
from socialgym_env.logs import SKIPPED_DUPLICATES, append_episode, iter_log_dir

ROOT = Path(__file__).resolve().parents[1]
PAIR = ["scripted:random", "scripted:tit_for_tat"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """``once/``: one log of 6 chicken episodes; ``twice/``: the same log and a copy of it."""
    root = tmp_path_factory.mktemp("readers")
    jobs = [EpisodeJob("chicken", seed, PAIR if seed % 2 else PAIR[::-1], config={"rounds": 3}) for seed in range(6)]
    run_jobs(jobs, log_path=root / "once" / "chicken.jsonl")
    (root / "twice").mkdir()
    shutil.copy(root / "once" / "chicken.jsonl", root / "twice" / "chicken.jsonl")
    shutil.copy(root / "once" / "chicken.jsonl", root / "twice" / "backup.jsonl")
    return root


def _read(path):
    notes = []
    reader = iter_log_dir(path, on_skip=lambda message, why: notes.append((why, message)))
    return [r["episode_id"] for r in reader], reader.duplicates, notes


def test_each_episode_is_read_once_and_the_copies_are_said_in_one_line(logs, tmp_path):
    once, _, none = _read(logs / "once")
    twice, dropped, notes = _read(logs / "twice")
    assert len(once) == 6 and none == []
    assert sorted(twice) == sorted(once) and dropped == 6
    assert notes == [(SKIPPED_DUPLICATES, "dropped 6 duplicate episode record(s) (an episode id already read "
                                          "with the same content): each episode counted once")]
    listed = iter_log_dir([logs / "once" / "chicken.jsonl", logs / "twice"])      # across arguments too
    assert len(list(listed)) == 6 and listed.duplicates == 12
    doubled = tmp_path / "doubled.jsonl"                                           # and within one file
    doubled.write_text((logs / "once" / "chicken.jsonl").read_text() * 2)
    assert _read(doubled)[:2] == (once, 6)


def test_a_conflicting_copy_names_both_files(logs, tmp_path):
    shutil.copytree(logs / "once", tmp_path / "logs")
    lines = (logs / "once" / "chicken.jsonl").read_text().splitlines()
    edited = json.loads(lines[3])
    edited["scores"] = {seat: 99.0 for seat in edited["scores"]}
    (tmp_path / "logs" / "z.jsonl").write_text(json.dumps(edited, sort_keys=True) + "\n")
    where = f"{tmp_path / 'logs' / 'chicken.jsonl'}:4 and {tmp_path / 'logs' / 'z.jsonl'}:1"
    with pytest.raises(LogFormatError, match=f"logged twice with different content: {where}"):
        load_records(tmp_path / "logs")


def test_the_same_content_written_another_way_is_a_copy_not_a_conflict(logs, tmp_path):
    """Lines differ (other key order and spacing) but the records are equal: a copy, dropped."""
    shutil.copytree(logs / "once", tmp_path / "logs")
    first = json.loads((logs / "once" / "chicken.jsonl").read_text().splitlines()[0])
    reordered = dict(reversed(list(first.items())))
    (tmp_path / "logs" / "z.jsonl").write_text(json.dumps(reordered, indent=None, separators=(" , ", " : ")) + "\n")
    ids, dropped, _ = _read(tmp_path / "logs")
    assert len(ids) == 6 and dropped == 1


def test_a_failure_and_its_retry_are_no_conflict_and_copies_of_a_failure_drop(logs, tmp_path):
    """A resume plays a failed episode again under its id: the failure stays in the log (the audit trail)."""
    good = json.loads((logs / "once" / "chicken.jsonl").read_text().splitlines()[0])
    failure = {**good, "failed": True, "finished": False, "error": "ConnectionError: down", "turns": []}
    log = tmp_path / "log.jsonl"
    for record in (failure, failure, {**failure, "error": "TimeoutError"}, good):
        append_episode(log, record)
    ids, dropped, _ = _read(log)
    assert ids == [good["episode_id"]] * 3 and dropped == 1
    records, skipped = load_records(log)
    assert len(records) == 1 and skipped["failed"] == 0 and skipped["duplicates"] == 1


def test_ratings_count_a_copied_log_once_and_say_so(logs):
    once, skipped_once = load_records(logs / "once")
    twice, skipped = load_records(logs / "twice")
    assert twice == once and skipped["duplicates"] == 6 and skipped_once["duplicates"] == 0
    assert "6 duplicate copies of episodes already read" in skipped_note(skipped)
    from socialgym_benchmarks.ratings.validity import validity_from_logs
    assert validity_from_logs(logs / "twice", folds=2)[0] == validity_from_logs(logs / "once", folds=2)[0]


def test_the_leaderboard_counts_a_copied_log_once(logs, tmp_path):
    """The issue's case: a copy in the logs folder doubled every count of leaderboard.csv."""
    from socialgym_benchmarks.leaderboard.render import build_leaderboard
    once = build_leaderboard(logs / "once", tmp_path / "once", n_boot=20)
    twice = build_leaderboard(logs / "twice", tmp_path / "twice", n_boot=20)
    assert twice["overall"] == once["overall"]
    assert (tmp_path / "twice" / "leaderboard.csv").read_bytes() == (tmp_path / "once" / "leaderboard.csv").read_bytes()
    assert "6 duplicate copies of episodes already read" in (tmp_path / "twice" / "leaderboard.md").read_text()


def test_export_reads_each_episode_once(logs, tmp_path):
    from socialgym_training.export import export
    once = export("sft", [logs / "once"], tmp_path / "once", tokenizer="")
    twice = export("sft", [logs / "twice", logs / "once"], tmp_path / "twice", tokenizer="")
    assert (twice["episodes_read"], twice["rows"]) == (once["episodes_read"], once["rows"]) == (6, once["rows"])
    assert twice["duplicates_dropped"] == 12 and once["duplicates_dropped"] == 0


def test_every_reader_of_logs_goes_through_iter_log_dir():
    """One place keeps one copy of an episode (and refuses pipes): no module reads log records around it.
    ``read_episodes`` (every record of one file, copies included) is for the resume helpers beside it."""
    callers = []
    for path in sorted(ROOT.glob("socialgym_*/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "read_episodes":
                callers.append(str(path.relative_to(ROOT)))
    assert set(callers) == {"socialgym_env/logs.py"}, callers
