"""The batched runner against the sequential loop, and its logging / resume / failure semantics."""
import json

import pytest

import socialgym_env
from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.scripted import RandomPolicy
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs
from socialgym_env.logs import read_episodes

SPECS = ["scripted:random", "scripted:tit_for_tat", "scripted:grim_trigger", "scripted:win_stay_lose_shift",
         "scripted:heuristic", "scripted:constant:defect"]


def _canonical(record):
    return json.dumps(record, sort_keys=True, ensure_ascii=False)


def _mixed_jobs(seeds=2):
    jobs = []
    for gi, game in enumerate(socialgym_env.game_ids()):
        seats = len(socialgym_env.make(game).possible_agents)
        for seed in range(seeds):
            jobs.append(EpisodeJob(game, seed, [SPECS[(gi + seed + i) % len(SPECS)] for i in range(seats)]))
    return jobs


def test_batched_records_are_byte_identical_to_the_sequential_loop():
    jobs = _mixed_jobs()
    sequential = [play_episode(job, PolicyPool()) for job in jobs]
    batched = run_jobs(jobs, PolicyPool(), max_concurrent_episodes=64)
    assert [r["episode_id"] for r in batched] == [j.episode_id for j in jobs]
    assert not [r["episode_id"] for r in batched if r.get("failed")]
    for a, b in zip(sequential, batched):
        assert _canonical(a) == _canonical(b), a["episode_id"]


class CountingPolicy(BasePolicy):
    """Records the size of each act_batch call."""

    policy_id = "counting"

    def __init__(self):
        super().__init__()
        self.batches = []

    def act_batch(self, requests):
        self.batches.append(len(requests))
        return [Decision(r.info["legal_action_list"][0]) for r in requests]


def test_one_act_batch_per_policy_per_tick_with_simultaneous_seats():
    policy = CountingPolicy()
    jobs = [EpisodeJob("prisoners_dilemma", s, ["counting", "counting"], config={"rounds": 3}) for s in range(5)]
    records = run_jobs(jobs, PolicyPool(prebuilt={"counting": policy}), max_concurrent_episodes=5)
    assert all(r["finished"] for r in records)
    assert policy.batches == [10, 10, 10]      # 5 games x 2 simultaneous seats, 3 rounds


class LimitedPolicy(CountingPolicy):
    """CountingPolicy that takes at most ``tick_limit`` decisions a tick, noting whose."""

    def __init__(self, limit):
        super().__init__()
        self.tick_limit, self.episodes = limit, []

    def act_batch(self, requests):
        self.episodes.append(sorted({r.key[0] for r in requests}))
        return super().act_batch(requests)


def test_a_tick_limit_serves_the_episodes_started_first_and_never_splits_a_group():
    """5 games of 2 simultaneous seats, a limit of 5 decisions a tick: 2 whole games a tick (4
    decisions; a third would split or overrun), the first-started games first; the records are
    those of an unlimited run."""
    jobs = [EpisodeJob("prisoners_dilemma", s, ["counting", "counting"], config={"rounds": 2}) for s in range(5)]
    limited = LimitedPolicy(5)
    records = run_jobs(jobs, PolicyPool(prebuilt={"counting": limited}), max_concurrent_episodes=5)
    unlimited = run_jobs(jobs, PolicyPool(prebuilt={"counting": CountingPolicy()}), max_concurrent_episodes=5)
    assert [_canonical(r) for r in records] == [_canonical(r) for r in unlimited]
    assert limited.batches == [4, 4, 4, 4, 2, 2]
    ids = [j.episode_id for j in jobs]
    assert limited.episodes[:2] == [sorted(ids[:2])] * 2          # both rounds of the first two games first
    assert limited.episodes[2:4] == [sorted(ids[2:4])] * 2 and limited.episodes[4:] == [ids[4:]] * 2


def test_progress_counts_only_the_ticks_that_decided_for_an_episode():
    """The tick-limit run above, as progress sees it: an episode waiting its turn behind the limit
    is not slowed down in its ticks (progress takes turns per tick as an episode's pace)."""
    jobs = [EpisodeJob("prisoners_dilemma", s, ["counting", "counting"], config={"rounds": 2}) for s in range(5)]
    seen = []
    run_jobs(jobs, PolicyPool(prebuilt={"counting": LimitedPolicy(5)}), max_concurrent_episodes=5,
             on_tick=lambda live, decisions: seen.append([entry.ticks for entry in live]))
    # before the first tick, then each tick: the live episodes in start order (the ended ones gone)
    assert seen == [[0] * 5, [1, 1, 0, 0, 0], [0, 0, 0], [1, 1, 0], [0], [1], []]


def test_a_group_larger_than_the_limit_still_runs_alone():
    limited = LimitedPolicy(1)
    [record] = run_jobs([EpisodeJob("prisoners_dilemma", 0, ["counting", "counting"], config={"rounds": 2})],
                        PolicyPool(prebuilt={"counting": limited}))
    assert record["finished"] and limited.batches == [2, 2]


def test_log_append_resume_and_concurrency_limit(tmp_path):
    log = tmp_path / "episodes.jsonl"
    jobs = _mixed_jobs(seeds=1)[:6]
    first = run_jobs(jobs[:3], log_path=log, max_concurrent_episodes=2)
    assert len(first) == 3
    again = run_jobs(jobs, log_path=log, max_concurrent_episodes=2)
    assert [r["episode_id"] for r in again] == [j.episode_id for j in jobs[3:]]
    assert sorted(r["episode_id"] for r in read_episodes(log)) == sorted(j.episode_id for j in jobs)


class ExplodingPolicy(BasePolicy):
    policy_id = "exploding"

    def act(self, observation, info, key=("", "")):
        if info.get("round", 0) >= 2:
            raise RuntimeError("policy bug in round 2")
        return Decision(info["legal_action_list"][0])


def test_failures_are_recorded_and_do_not_stop_other_episodes(tmp_path):
    log = tmp_path / "episodes.jsonl"
    pool = PolicyPool(prebuilt={"exploding": ExplodingPolicy()})
    jobs = [EpisodeJob("prisoners_dilemma", 0, ["exploding", "scripted:random"], config={"rounds": 3}),
            EpisodeJob("rock_paper_scissors", 0, ["scripted:random", "scripted:random"], config={"rounds": 3}),
            EpisodeJob("no_such_game", 0, ["scripted:random"]),
            EpisodeJob("prisoners_dilemma", 1, ["scripted:random"], config={"rounds": 3})]
    records = run_jobs(jobs, pool, log_path=log)
    assert [bool(r.get("failed")) for r in records] == [True, False, True, True]
    assert "policy bug in round 2" in records[0]["error"]
    assert "seats" in records[3]["error"]
    assert len(list(read_episodes(log))) == 4


def test_duplicate_episode_ids_run_one_after_the_other():
    job = EpisodeJob("prisoners_dilemma", 0, ["scripted:random", "scripted:random"], config={"rounds": 2})
    records = run_jobs([job, job], resume=False)
    assert len(records) == 2 and _canonical(records[0]) == _canonical(records[1])


class BatchingRandom(RandomPolicy):
    """A random player that, like a model policy, waits for the tick (not instant)."""

    instant = False

    def __init__(self):
        super().__init__()
        self.batches = []

    def act_batch(self, requests):
        self.batches.append(len(requests))
        return super().act_batch(requests)


def test_scripted_turns_do_not_wait_for_a_tick(monkeypatch):
    """A model seat among scripted ones: the runner ticks once per decision of the batching
    policy, not once per turn (scripted turns are played as soon as they are due)."""
    from socialgym_agents import batched
    ticks = []
    decide = batched._BatchRun.decide
    monkeypatch.setattr(batched._BatchRun, "decide", staticmethod(lambda by_policy: ticks.append(1) or decide(by_policy)))
    policy = BatchingRandom()
    job = EpisodeJob("resistance", 3, ["counting"] + ["scripted:random"] * 4)
    [record] = run_jobs([job], PolicyPool(prebuilt={"counting": policy}))
    model_turns = sum(1 for t in record["turns"] if t["agent"] == "player_0")
    assert record["finished"] and not record.get("failed")
    assert len(ticks) == len(policy.batches) == model_turns
    assert len(record["turns"]) > 2 * model_turns      # the scripted seats took most turns
    assert _canonical(record) == _canonical(play_episode(job, PolicyPool(prebuilt={"counting": BatchingRandom()})))


class InstantExploding(ExplodingPolicy):
    instant = True


def test_an_instant_policy_that_raises_fails_only_its_episode():
    pool = PolicyPool(prebuilt={"exploding": InstantExploding()})
    jobs = [EpisodeJob("prisoners_dilemma", 0, ["exploding", "scripted:random"], config={"rounds": 3}),
            EpisodeJob("rock_paper_scissors", 0, ["scripted:random", "scripted:random"], config={"rounds": 3})]
    records = run_jobs(jobs, pool)
    assert [bool(r.get("failed")) for r in records] == [True, False]
    assert "policy bug in round 2" in records[0]["error"]
