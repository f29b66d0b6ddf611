"""Issue 45 item 6: a killed run resumes the episodes it had in flight from their journaled turns,
and the logs it ends with equal an unbroken run's byte for byte."""
import json
import random

import pytest

from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.config import LLMConfig
from socialgym_agents.llm.policy import LLMPolicy
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_benchmarks.perf.resume_check import killing_after
from socialgym_env.journal import journal_path, read_journal

from helpers import SeededChoiceBackend


class GrammarChoiceBackend:
    """A seeded stand-in for a sampling model: a legal reply drawn from each request's sampling
    seed (free-text decisions get junk, which exercises the re-ask and the fallback)."""

    kind = "fake"
    model_name = "fake-model"

    def __init__(self):
        self.calls = 0

    def complete(self, items):
        self.calls += len(items)
        replies = []
        for item in items:
            rng = random.Random(item.sample_seed)
            finite = getattr(item.grammar, "finite", None)
            replies.append(Reply(rng.choice(finite) if finite and rng.random() > 0.1 else "I am not sure."))
        return replies


class CountingSeededChoiceBackend(SeededChoiceBackend):
    """JSON replies for Prisoner's Dilemma, unusable text elsewhere (re-asks and fallbacks)."""

    calls = 0

    def complete(self, items):
        self.calls += len(items)
        return super().complete(items)


def _pool(backend_class):
    backend = backend_class()
    policy = LLMPolicy(backend, LLMConfig(max_retries=1, constrained=True), "fake-llm")
    return PolicyPool(prebuilt={"fake-llm": policy}), backend


# Games with an LLM seat among scripted seats whose random draws must be restored too.
JOBS = ([EpisodeJob("prisoners_dilemma", seed, ["fake-llm", "scripted:random"], config={"rounds": 6},
                    episode_id=f"pd-{seed}") for seed in range(3)]
        + [EpisodeJob("coup", seed, ["fake-llm", "scripted:random", "scripted:heuristic", "scripted:random"],
                      episode_id=f"coup-{seed}")
           for seed in range(2)]
        + [EpisodeJob("liars_dice", seed, ["scripted:random", "fake-llm", "scripted:random"], episode_id=f"ld-{seed}")
           for seed in range(2)])


class Killed(BaseException):
    """What a kill looks like to the runner: nothing after it runs."""


def _log_lines(path):
    return sorted(path.read_bytes().splitlines()) if path.exists() else []


def _unbroken(tmp_path, backend_class=GrammarChoiceBackend):
    log = tmp_path / "unbroken" / "log.jsonl"
    pool, backend = _pool(backend_class)
    run_jobs(JOBS, pool, log_path=log, journal=journal_path(log))
    assert not journal_path(log).exists()          # a run that ends leaves no journal behind
    return _log_lines(log), backend.calls


def _killed_after(log, ticks, backend_class=GrammarChoiceBackend):
    pool, backend = _pool(backend_class)
    seen = [0]

    def on_tick(live, decisions):
        if live and all(entry.ticks == 0 for entry in live):
            return                      # the state before the first decision, not a tick
        seen[0] += 1
        if seen[0] == ticks:
            raise Killed
    with pytest.raises(Killed):
        run_jobs(JOBS, pool, log_path=log, journal=journal_path(log), on_tick=on_tick)
    return backend.calls


@pytest.mark.parametrize("backend_class", [GrammarChoiceBackend, CountingSeededChoiceBackend])
def test_a_killed_run_resumes_in_flight_episodes_to_the_same_bytes(tmp_path, backend_class, capsys):
    unbroken, unbroken_calls = _unbroken(tmp_path, backend_class)
    log = tmp_path / "killed" / "log.jsonl"
    killed_calls = _killed_after(log, 4, backend_class)
    chains = read_journal(journal_path(log))
    assert chains, "the killed run journaled no turn of its episodes in flight"
    journaled = sum(len(d["decisions"]) for chain in chains.values() for d in chain)
    pool, backend = _pool(backend_class)
    run_jobs(JOBS, pool, log_path=log, journal=journal_path(log))
    assert _log_lines(log) == unbroken
    assert "do not replay" not in capsys.readouterr().err
    assert not journal_path(log).exists()
    # no decision was asked of the model twice: the journaled ones were replayed, not re-sampled
    assert journaled > 0 and killed_calls + backend.calls == unbroken_calls, (killed_calls, backend.calls)


def test_a_kill_at_any_byte_of_the_journal_still_resumes_to_the_same_bytes(tmp_path):
    """A kill during a journal write leaves a torn last line: every cut resumes to the same logs."""
    unbroken, _ = _unbroken(tmp_path)
    source = tmp_path / "source" / "log.jsonl"
    _killed_after(source, 5)
    journal = journal_path(source).read_bytes()
    ends = [i + 1 for i, byte in enumerate(journal) if byte == ord("\n")]
    cuts = sorted({0, 1, len(journal) // 3, ends[0] - 7, ends[len(ends) // 2], ends[-1] - 3, len(journal)})
    for cut in cuts:
        log = tmp_path / f"cut{cut}" / "log.jsonl"
        log.parent.mkdir()
        if source.exists():
            log.write_bytes(source.read_bytes())
        journal_path(log).write_bytes(journal[:cut])
        pool, _ = _pool(GrammarChoiceBackend)
        run_jobs(JOBS, pool, log_path=log, journal=journal_path(log))
        assert _log_lines(log) == unbroken, cut


def test_a_journal_that_does_not_replay_restarts_the_episode_and_says_so(tmp_path, capsys):
    unbroken, _ = _unbroken(tmp_path)
    log = tmp_path / "edited" / "log.jsonl"
    _killed_after(log, 3)
    lines = journal_path(log).read_text().splitlines()
    edited = []
    for line in lines:
        entry = json.loads(line)
        for decision in entry.get("decisions", []):
            if decision["agent"] != "player_0" and entry["episode_id"].startswith("ld-"):
                decision["action"] = "challenge" if decision["action"] != "challenge" else "bid 1 1"
        edited.append(json.dumps(entry))
        if entry.get("episode_id") == "pd-0" and entry.get("turn") == 0:   # a line that breaks the replay itself
            entry["decisions"] = [{"agent": d["agent"]} for d in entry["decisions"]]
            edited[-1] = json.dumps(entry)
    journal_path(log).write_text("\n".join(edited) + "\n")
    pool, _ = _pool(GrammarChoiceBackend)
    run_jobs(JOBS, pool, log_path=log, journal=journal_path(log))
    assert _log_lines(log) == unbroken
    err = capsys.readouterr().err
    assert "ld-0: its" in err and "ld-1: its" in err              # the scripted seats' actions disagree
    assert "pd-0: its 3 journaled ticks do not replay ('action')" in err   # a line the replay chokes on


def test_an_interrupted_tournament_says_what_it_keeps_and_resumes_in_flight_episodes(tmp_path, monkeypatch, capsys):
    from socialgym_benchmarks.tournament import backends
    from socialgym_benchmarks.tournament import plan_tournament, run_tournament
    jobs = plan_tournament(["prisoners_dilemma", "liars_dice"], ["fake-llm", "scripted:random"], episodes=2, seed=3,
                           configs={"prisoners_dilemma": {"rounds": 5}})
    monkeypatch.setattr(backends, "PolicyPool", lambda seed=0: _pool(GrammarChoiceBackend)[0])

    def logs(out):
        return {path.name: sorted(path.read_bytes().splitlines()) for path in sorted((out / "logs").glob("*.jsonl"))}
    run_tournament(jobs, tmp_path / "unbroken", progress=False, leaderboard=False)
    real_tick = backends._tick_callback
    monkeypatch.setattr(backends, "_tick_callback", killing_after(3))
    with pytest.raises(KeyboardInterrupt):
        run_tournament(jobs, tmp_path / "killed", progress=True, leaderboard=False)
    err = capsys.readouterr().err
    assert "episodes in play keep their" in err and "journaled turns" in err, err
    monkeypatch.setattr(backends, "_tick_callback", real_tick)
    run_tournament(jobs, tmp_path / "killed", progress=False, leaderboard=False)
    assert logs(tmp_path / "killed") == logs(tmp_path / "unbroken")
    assert not list((tmp_path / "killed" / "logs").glob("*.journal"))
    from socialgym_env.journal import read_timing
    timing = read_timing(tmp_path / "killed" / "logs")
    assert set(timing) == {job.episode_id for job in jobs}
    records = [json.loads(line) for lines in logs(tmp_path / "killed").values() for line in lines]
    assert all(set(timing[r["episode_id"]]) == set(range(len(r["turns"]))) for r in records)


def test_the_journal_reader_keeps_one_continuing_chain_per_episode(tmp_path):
    from socialgym_env.journal import append_journal, compact_journal

    def group(episode, turn, after):
        return {"episode_id": episode, "job": "j", "turn": turn, "after": after, "decisions": [{"agent": "a"}]}
    path = tmp_path / "g.journal"
    append_journal(path, [group("x", 0, 1), group("x", 1, 3), group("y", 0, 2), group("y", 5, 6)])  # y: a gap
    append_journal(path, [group("x", 0, 1)])                      # x started again from its first turn
    append_journal(path, [group("z", 0, 1), {"episode_id": "z", "end": True}])      # z ended: retired
    with open(path, "ab") as handle:
        handle.write(b'{"episode_id": "x", "turn": 1, "aft')      # a kill mid-write
    chains = read_journal(path)
    assert {e: [(g["turn"], g["after"]) for g in c] for e, c in chains.items()} == {"x": [(0, 1)], "y": [(0, 2)]}
    append_journal(path, [group("x", 1, 2)])                      # the next write starts on a fresh line
    assert [(g["turn"], g["after"]) for g in read_journal(path)["x"]] == [(0, 1), (1, 2)]
    assert set(compact_journal(path, keep={"y"})) == {"y"} and set(read_journal(path)) == {"y"}
    compact_journal(path, keep=())
    assert not path.exists()
