"""Atomic outputs (socialgym_env.atomic): a file or folder appears complete or not at all, and a
writer killed with SIGKILL at random moments never leaves a half-written export or leaderboard."""
import csv
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from socialgym_env.atomic import (append_csv_rows, append_records, atomic_dir, atomic_file, atomic_savefig,
                                  atomic_write_json, atomic_write_text, drop_torn_tail)
from socialgym_env.errors import LogFormatError
from socialgym_env.logs import append_episode, read_episodes

ROOT = Path(__file__).resolve().parents[1]


def leftovers(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "board.md"
    atomic_write_text(path, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_file(path) as handle:
            handle.write("half of the new")
            raise RuntimeError("killed by a bug half-way")
    assert path.read_text() == "old\n" and leftovers(tmp_path) == []
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n" and leftovers(tmp_path) == []
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_json_is_always_valid_json(tmp_path):
    atomic_write_json(tmp_path / "m.json", {"loss": float("nan"), "ok": [1.0, float("inf")]}, sort_keys=True)
    assert json.loads((tmp_path / "m.json").read_text(), parse_constant=lambda c: pytest.fail(c)) == \
        {"loss": None, "ok": [1.0, None]}


def test_a_figure_is_saved_whole_in_the_suffix_format(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    atomic_savefig(fig, tmp_path / "curve.png", dpi=30)
    atomic_savefig(fig, tmp_path / "curve.svg")
    plt.close(fig)
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "curve.svg").read_bytes()[:500]
    assert leftovers(tmp_path) == []


def test_a_folder_is_replaced_whole_and_a_foreign_one_is_refused(tmp_path):
    out = tmp_path / "export"
    with atomic_dir(out, marker="export.json") as folder:
        (folder / "export.json").write_text("1")
        (folder / "train.jsonl").write_text("a\n")
    with pytest.raises(RuntimeError):
        with atomic_dir(out, marker="export.json") as folder:
            (folder / "export.json").write_text("2")
            raise RuntimeError("failed half-way")
    assert (out / "export.json").read_text() == "1" and leftovers(tmp_path) == []
    with atomic_dir(out, marker="export.json") as folder:
        (folder / "export.json").write_text("3")
    assert sorted(p.name for p in out.iterdir()) == ["export.json"] and (out / "export.json").read_text() == "3"
    assert leftovers(tmp_path) == []
    mine = tmp_path / "my_notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(FileExistsError, match="already holds other files"):
        with atomic_dir(mine, marker="export.json"):
            pytest.fail("the block must not run")
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_appends_start_a_fresh_line_after_a_torn_one(tmp_path):
    path = tmp_path / "rollouts.csv"
    append_csv_rows(path, [[0, "wolf", 0.5], [0, "villager", -0.5]])
    with open(path, "a") as handle:
        handle.write("1,wol")                      # a writer killed mid-line
    append_csv_rows(path, [[2, "wolf", 1.0]])
    assert list(csv.reader(path.open())) == [["0", "wolf", "0.5"], ["0", "villager", "-0.5"], ["1", "wol"],
                                             ["2", "wolf", "1.0"]]
    append_records(tmp_path / "x.log", b"a\n")
    assert (tmp_path / "x.log").read_bytes() == b"a\n"


def test_a_torn_tail_is_cut_and_a_resumed_spy_dataset_is_whole(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    assert drop_torn_tail(path) == 6 and path.read_bytes() == b'{"a": 1}\n'
    assert drop_torn_tail(path) == 0 and drop_torn_tail(tmp_path / "absent") == 0
    from socialgym_benchmarks.studies.find_the_spy import generate
    from socialgym_env.socialmaze.spy import read_instances
    out = tmp_path / "spy.jsonl"
    first = generate(out, 3, seed=1)
    with open(out, "a") as handle:
        handle.write('{"id": "spy-s1-000003", "wor')          # a run killed while appending
    again = generate(out, 5, seed=1)
    assert [i.id for i in read_instances(out)] == [i.id for i in again] and len(again) == 5
    assert [i.to_dict() for i in again[:3]] == [i.to_dict() for i in first]


# ---------------------------------------------------------------------- strict logs
def record(**fields) -> dict:
    base = {"schema": "socialgym.episode/1", "episode_id": "e1", "game": "prisoners_dilemma", "seed": 0,
            "roster": [{"agent": "player_0", "policy": "p"}, {"agent": "player_1", "policy": "q"}],
            "turns": [{"agent": "player_0", "raw": "cooperate", "action": "cooperate", "valid": True}],
            "scores": {"player_0": 3, "player_1": 3}, "rewards": {"player_0": 0.0, "player_1": 0.0},
            "finished": True}
    base.update(fields)
    return base


BAD_RECORDS = {
    "turns not a list": ({"turns": {"0": 1}}, "turns must be a list, got an object"),
    "a turn not an object": ({"turns": ["cooperate"]}, r"turns\[0\] must be an object, got a string"),
    "a turn without raw": ({"turns": [{"agent": "player_0"}]}, r"turns\[0\] lacks 'raw'"),
    "raw a number": ({"turns": [{"agent": "player_0", "raw": 3}]}, r"turns\[0\]\.raw must be a string, got an integer"),
    "valid a string": ({"turns": [{"agent": "player_0", "raw": "x", "valid": "yes"}]}, r"turns\[0\]\.valid must be true/false"),
    "seed a float": ({"seed": 1.5}, "seed must be an integer, got a number"),
    "seed a bool": ({"seed": True}, "seed must be an integer, got true/false"),
    "seat without agent": ({"roster": [{"policy": "p"}]}, r"roster\[0\] lacks 'agent'"),
    "policy a list": ({"roster": [{"agent": "player_0", "policy": ["p"]}]}, r"roster\[0\]\.policy must be a string or null, got a list"),
    "reward a string": ({"rewards": {"player_0": "1", "player_1": 0}}, r"rewards\['player_0'\] must be a finite number"),
    "a reward true/false": ({"rewards": {"player_0": True, "player_1": 0}},
                            r"rewards\['player_0'\] must be a finite number, got true/false"),
    "config a list": ({"config": [1]}, "config must be an object or null, got a list"),
    "transcript of numbers": ({"transcript": [1]}, r"transcript\[0\] must be a string"),
    "metrics a string": ({"metrics": "good"}, "metrics must be an object or null"),
}


@pytest.mark.parametrize("label", sorted(BAD_RECORDS))
def test_strict_reader_names_the_line_the_field_and_what_was_expected(tmp_path, label):
    fields, expected = BAD_RECORDS[label]
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(record(episode_id="fine")) + "\n" + json.dumps(record(**fields)) + "\n")
    with pytest.raises(LogFormatError, match=rf"log\.jsonl:2: not a valid episode record: {expected}"):
        list(read_episodes(log, strict=True))
    with pytest.warns(UserWarning, match="log.jsonl:2: skipped a bad episode line"):
        assert [r["episode_id"] for r in read_episodes(log)] == ["fine"]     # later stages never see it
    with pytest.raises(LogFormatError, match=expected):
        append_episode(tmp_path / "out.jsonl", record(**fields))             # and we never write it
    assert not (tmp_path / "out.jsonl").exists()


def test_nan_is_refused_on_write_and_on_read(tmp_path):
    with pytest.raises(LogFormatError, match=r"cannot be logged: record\['metrics'\]\['rate'\] is nan"):
        append_episode(tmp_path / "log.jsonl", record(metrics={"rate": float("nan")}))
    assert not (tmp_path / "log.jsonl").exists()
    (tmp_path / "log.jsonl").write_text(json.dumps(record(metrics={"rate": float("nan")})) + "\n")   # NaN token
    with pytest.raises(LogFormatError, match="not a valid episode record: NaN is not JSON"):
        list(read_episodes(tmp_path / "log.jsonl", strict=True))


def test_a_failed_record_may_have_no_scores_or_rewards(tmp_path):
    append_episode(tmp_path / "log.jsonl", record(scores=None, rewards=None, failed=True, error="down", turns=[]))
    assert len(list(read_episodes(tmp_path / "log.jsonl", strict=True))) == 1


@pytest.mark.parametrize("broken, expected", [
    ({"game": "no_such_game"}, "cannot be replayed here: unknown game 'no_such_game'"),
    ({"config": {"rounds": "ten"}}, "cannot be replayed here: prisoners_dilemma: config 'rounds' must be int"),
    ({"turns": [{"agent": "player_1", "raw": "cooperate"}]}, "turn 0 was player_1's in the log but player_0's"),
    ({"turns": [{"raw": "cooperate"}]}, r"turns\[0\] lacks 'agent'"),
])
def test_replay_of_a_malformed_record_is_a_log_format_error(broken, expected):
    from socialgym_env.logs import replay_observations
    with pytest.raises(LogFormatError, match=expected):
        replay_observations(record(**broken))


def test_decision_rows_of_a_malformed_record_is_a_log_format_error():
    from socialgym_training.export import decision_rows
    with pytest.raises(LogFormatError, match=r"turns\[0\] lacks 'raw'"):
        decision_rows([record(turns=[{"agent": "player_0"}])])
    meta = {"attempts": [1]}                       # an attempt that is not an object
    with pytest.raises(LogFormatError, match="episode 'e1': malformed record"):
        decision_rows([record(turns=[{"agent": "player_0", "raw": "cooperate", "agent_meta": meta}])])


# ---------------------------------------------------------------------- SIGKILL at random moments
WRITER = textwrap.dedent("""
    import sys, itertools, threading, time
    sys.path.insert(0, {root!r})
    import datasets
    from datasets import Dataset, DatasetDict
    from socialgym_benchmarks.leaderboard.render import build_leaderboard
    from socialgym_training.export import save_dataset
    datasets.disable_progress_bars()
    out, logs = sys.argv[1], sys.argv[2:]

    def exports():                  # one export after another, alternately 300 and 3,000 rows
        for n in itertools.cycle((300, 3000)):
            rows = [{{"episode_id": f"e{{i // 3}}", "prompt": "p" * 2000, "i": i}} for i in range(n)]
            data = DatasetDict(train=Dataset.from_list(rows[: n * 2 // 3]), test=Dataset.from_list(rows[n * 2 // 3:]))
            save_dataset(data, out + "/export", {{"n": n}})

    def boards():                   # leaderboards of the two log folders in turn
        for logdir in itertools.cycle(logs):
            build_leaderboard(logdir, out + "/board", n_boot=20)
            print("wrote", logdir, flush=True)
            time.sleep(0.5)         # a pause between rebuilds, where a kill finds a complete board

    threading.Thread(target=exports, daemon=True).start()
    boards()
""")


def check_export(folder: Path) -> str:
    """'absent' or 'complete': never a folder whose files disagree with its own export.json."""
    if not folder.exists():
        return "absent"
    summary = json.loads((folder / "export.json").read_text())
    for split, rows in summary["rows"].items():
        lines = (folder / f"{split}.jsonl").read_text().splitlines()
        assert len(lines) == rows, (split, len(lines), summary)
        assert all(json.loads(line)["prompt"] == "p" * 2000 for line in lines)
    assert sum(summary["rows"].values()) == summary["n"]
    assert json.loads((folder / "dataset_dict.json").read_text())["splits"] == ["train", "test"]
    return "complete"


def check_board(folder: Path) -> str:
    """'absent' (no leaderboard.json yet) or 'complete': every file leaderboard.json lists is
    there, and leaderboard.csv ranks exactly the policies the json holds."""
    if not (folder / "leaderboard.json").exists():
        return "absent"
    summary = json.loads((folder / "leaderboard.json").read_text())
    for path in summary["files"].values():
        assert Path(path).stat().st_size > 0, path
    ranked = [row["policy"] for row in csv.DictReader((folder / "leaderboard.csv").open())]
    assert sorted(ranked) == sorted(summary["overall"]), (ranked, sorted(summary["overall"]))
    return "complete"


@pytest.fixture(scope="module")
def two_logs(tmp_path_factory):
    """Two log folders whose leaderboards rank different policy sets (2 and 3 policies)."""
    from socialgym_agents.runner import EpisodeJob, run_jobs
    base = tmp_path_factory.mktemp("kill_logs")
    sets = {"a": ["scripted:random", "scripted:tit_for_tat"],
            "b": ["scripted:random", "scripted:tit_for_tat", "scripted:heuristic"]}
    for name, policies in sets.items():
        jobs = [EpisodeJob("prisoners_dilemma", seed, [x, y], config={"rounds": 2})
                for seed in range(2) for x in policies for y in policies if x != y]
        run_jobs(jobs, log_path=base / name / "pd.jsonl")
    return [str(base / "a"), str(base / "b")]


def test_sigkill_at_random_moments_never_leaves_a_half_written_output(tmp_path, two_logs):
    """An export and a leaderboard rewritten in a loop (two threads) by a process killed with
    SIGKILL at a random moment, five times: each output is then absent or complete."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT)))
    rng = random.Random(30)
    seen = {"export": [], "board": []}
    for kill in range(5):
        with open(tmp_path / "stderr.txt", "wb") as errors:
            proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out"), *two_logs],
                                    stdout=subprocess.PIPE, stderr=errors, start_new_session=True)
            first = proc.stdout.readline()      # a whole leaderboard written: the kill lands in a later one
            assert first.startswith(b"wrote"), (tmp_path / "stderr.txt").read_text()[-2000:]
            # the first kill lands in the pause after a build (so the check is not vacuous), the
            # others at random moments, mostly inside a rebuild or an export
            time.sleep(0.0 if kill == 0 else rng.uniform(0.0, 1.2))
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
        seen["export"].append(check_export(tmp_path / "out" / "export"))
        seen["board"].append(check_board(tmp_path / "out" / "board"))
    # every kill left old-complete or new-complete outputs (absent only between the two renames)
    assert set(seen["export"]) <= {"complete", "absent"} and "complete" in seen["export"], seen
    assert set(seen["board"]) <= {"complete", "absent"} and "complete" in seen["board"], seen
    # the next run removes what the killed writers left (hidden .tmp files, .tmp/.old folders)
    from socialgym_benchmarks.leaderboard.render import build_leaderboard
    build_leaderboard(two_logs[0], tmp_path / "out" / "board", n_boot=20)
    with atomic_dir(tmp_path / "out" / "export", marker="export.json") as folder:
        (folder / "export.json").write_text("{}")
    assert leftovers(tmp_path / "out") == [] and leftovers(tmp_path / "out" / "board") == []


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary", b'{"id": "x", "wor', b'{"pairs": [1, 2]}\n', b"[1, 2]\n"])
def test_dataset_readers_name_the_file_line_and_what_was_expected(tmp_path, content):
    from socialgym_env.socialmaze.dataset import read_jsonl
    from socialgym_env.socialmaze.spy import read_instances
    path = tmp_path / "data.jsonl"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"data\.jsonl(:1)? is not a Find the Spy data set"):
        read_instances(path)
    with pytest.raises(ValueError, match=r"data\.jsonl(:1)? is not a SocialMaze data set"):
        read_jsonl(path)


KILLED_MID_WRITE = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from socialgym_env.atomic import atomic_dir, atomic_file
    out = sys.argv[1]
    with atomic_dir(out + "/export") as folder, atomic_file(out + "/board.md") as handle:
        (folder / "big.bin").write_bytes(b"x" * 100_000)
        handle.write("half")
        print("writing", flush=True)
        time.sleep(60)
""")


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(KILLED_MID_WRITE.format(root=str(ROOT)))
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"writing\n"
    proc.kill()
    proc.wait()
    proc.stdout.close()
    left = leftovers(out)
    assert len(left) == 2 and all(f".{proc.pid}-" in name for name in left), left
    # a live writer's temporaries (this process's) are left alone
    live = out / f".board.md.{os.getpid()}-abcdefgh.tmp"
    live.write_text("in progress")
    atomic_write_text(out / "board.md", "whole\n")
    with atomic_dir(out / "export") as folder:
        (folder / "a.txt").write_text("a")
    assert leftovers(out) == [live.name]
    assert (out / "board.md").read_text() == "whole\n" and [p.name for p in (out / "export").iterdir()] == ["a.txt"]


@pytest.mark.parametrize("kind", ["pipe", "link", "socket"])
def test_only_regular_files_are_ever_replaced(tmp_path, kind):
    """A device, pipe, socket or link at the output path is refused, not replaced by a file
    (os.replace would put a regular file where /dev/null was)."""
    import socket
    import stat
    from socialgym_env.atomic import NotRegularFileError
    path = tmp_path / "out"
    if kind == "pipe":
        os.mkfifo(path)
    elif kind == "link":
        (tmp_path / "target").write_text("kept")
        path.symlink_to(tmp_path / "target")
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
    before = os.lstat(path).st_mode
    for write in (lambda: atomic_write_text(path, "x"), lambda: atomic_write_json(path, {}),
                  lambda: atomic_dir(path).__enter__()):
        with pytest.raises(NotRegularFileError, match="not replaced"):
            write()
        assert os.lstat(path).st_mode == before and stat.S_IFMT(before) != stat.S_IFREG
    assert kind != "link" or (tmp_path / "target").read_text() == "kept"
    assert leftovers(tmp_path) == []
