"""Scripted iterated-game strategies, the sequential runner, and reading logs back."""
import json
import warnings

import pytest

from socialgym_agents.registry import make_policy
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_env.errors import LogFormatError
from socialgym_env.logs import append_episode, completed_episode_ids, read_episodes


def moves_of(record, agent):
    return [t["action"] for t in record["turns"] if t["agent"] == agent]


def play(game, seats, seed=0, **config):
    return run_jobs([EpisodeJob(game, seed, seats, config=config)])[0]


def test_tit_for_tat_copies_the_opponents_last_move():
    record = play("prisoners_dilemma", ["scripted:tit_for_tat", "scripted:constant:defect"])
    assert moves_of(record, "player_0") == ["cooperate"] + ["defect"] * 4
    assert record["scores"] == {"player_0": 4.0, "player_1": 9.0}


def test_grim_trigger_never_forgives_and_wsls_switches_after_a_bad_round():
    # Opponent: random; grim defects for ever after the first defection it sees.
    record = play("prisoners_dilemma", ["scripted:grim_trigger", "scripted:random"], seed=5, rounds=8)
    theirs = moves_of(record, "player_1")
    mine = moves_of(record, "player_0")
    first_defection = theirs.index("defect") if "defect" in theirs else len(theirs)
    assert mine[: first_defection + 1] == ["cooperate"] * (first_defection + 1)
    assert all(m == "defect" for m in mine[first_defection + 1:])
    record = play("prisoners_dilemma", ["scripted:win_stay_lose_shift", "scripted:constant:defect"], rounds=4)
    assert moves_of(record, "player_0") == ["cooperate", "defect", "cooperate", "defect"]


def test_tit_for_tat_in_chicken_and_stag_hunt():
    record = play("chicken", ["scripted:tit_for_tat", "scripted:constant:straight"], rounds=3)
    assert moves_of(record, "player_0") == ["swerve", "straight", "straight"]
    record = play("stag_hunt", ["scripted:tit_for_tat"] * 3 + ["scripted:constant:hare"], rounds=2)
    assert moves_of(record, "player_0") == ["stag", "hare"]


def test_unknown_policy_specs_name_the_valid_ones():
    with pytest.raises(ValueError, match="unknown scripted policy 'smart'; valid: scripted:constant:<action>"):
        make_policy("scripted:smart")
    with pytest.raises(ValueError, match="unknown policy spec 'gpt9'"):
        make_policy("gpt9")


def test_random_policy_is_reproducible_per_seed():
    a = play("public_goods", ["scripted:random"] * 4, seed=9, rounds=3)
    b = play("public_goods", ["scripted:random"] * 4, seed=9, rounds=3)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_failed_episode_is_recorded_with_the_reason(tmp_path):
    class Broken:
        policy_id = "broken"

        def reset(self, key, seed=None):
            pass

        def act_batch(self, requests):
            raise ConnectionError("model server unreachable")

    log = tmp_path / "log.jsonl"
    pool = PolicyPool(prebuilt={"broken": Broken()})
    records = run_jobs([EpisodeJob("chicken", 1, ["broken", "scripted:random"])], pool=pool, log_path=log)
    assert records[0]["failed"] is True
    assert records[0]["error"] == "ConnectionError: model server unreachable"
    assert [r["episode_id"] for r in read_episodes(log)] == [records[0]["episode_id"]]


def test_log_roundtrip_resume_and_truncated_lines(tmp_path):
    log = tmp_path / "runs" / "log.jsonl"
    jobs = [EpisodeJob("chicken", s, ["scripted:random", "scripted:random"], config={"rounds": 2}) for s in range(3)]
    run_jobs(jobs[:2], log_path=log)
    assert completed_episode_ids(log) == {jobs[0].episode_id, jobs[1].episode_id}
    # A run killed mid-write leaves half a line; the next append starts on a new line.
    with open(log, "a", encoding="utf-8") as handle:
        handle.write('{"schema": "socialgym.episode/1", "episode_id": "half')
    new = run_jobs(jobs, log_path=log)           # resume: only the missing episode is played
    assert [r["episode_id"] for r in new] == [jobs[2].episode_id]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = [r["episode_id"] for r in read_episodes(log)]
    assert ids == [j.episode_id for j in jobs]
    assert any(":3: skipped a bad episode line" in str(w.message) for w in caught)
    with pytest.raises(LogFormatError, match=":3: not a valid episode record"):
        list(read_episodes(log, strict=True))


def test_record_of_another_schema_is_rejected(tmp_path):
    log = tmp_path / "x.jsonl"
    log.write_text(json.dumps({"schema": "other/9", "episode_id": "e"}) + "\n")   # another tool's line
    with pytest.raises(LogFormatError, match="episode record lacks"):
        list(read_episodes(log, strict=True))
    with pytest.raises(LogFormatError, match="episode record lacks"):
        append_episode(log, {"schema": "other/9", "episode_id": "e"})   # and never written by us
