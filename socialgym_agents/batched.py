"""The batched rollout runner: many episodes at once, every pending decision in one batch per policy.

Each tick:

1. keep up to ``max_concurrent_episodes`` envs live (any mix of games and seats; new jobs start
   as others finish);
2. gather every decision that is due now: for each live env, ``env.pending_actors()`` (the
   one seat to move, or every remaining actor of a simultaneous phase, whose decisions are
   independent); turns whose every actor is an ``instant`` policy (the scripted ones) are
   played on the spot first, so a tick is spent only on decisions that batch. A policy with a
   ``tick_limit`` (a local model: its ``batch_size``) takes at most that many decisions a tick,
   the episodes started first first (an episode's group is never split; the others wait a
   tick). Jobs start longest first, so the long episodes, whose chain of decisions sets when a
   tournament ends, move once per short tick instead of waiting on ticks of every live game;
3. group the requests by policy and call ``policy.act_batch`` once per policy (the local LLM
   backend decodes them as one padded batch reusing per-seat KV caches; the API backend sends
   them concurrently);
4. step each env with its decisions in AEC order (``pending_actors`` order is the order the env
   selects agents in), skipping dead-agent steps; a finished episode is appended to the log at
   once and its seats' caches are released.

Equivalence with the sequential loop (:func:`socialgym_agents.runner.play_episode`): a policy sees the
same observation and info for each decision, with one exact adjustment: in a simultaneous
phase the 2nd, 3rd... actor's request is built before the earlier actors have stepped, so its
``info["step"]`` is advanced by its index in the pending list (the only field a step of
another seat changes within a simultaneous phase; messages are only added when the phase
resolves). Records are byte-identical to the sequential loop for policies whose RNG is per
seat (all of ours); only the log order differs (episodes are appended as they finish).

A job whose env or policy raises, or whose policy returns ``Decision.error`` (a model server
down after its retries), is recorded with :func:`socialgym_agents.jobs.failed_record`; the other
episodes go on.

With a ``journal`` (:mod:`socialgym_env.journal`) every live episode's decisions are appended at
the end of each tick, and a job whose journal holds turns starts from them: its env is reset with
the same seed and the journaled decisions are applied again, each seat's policy brought to the
state it had (an instant policy decides again and must give the journaled action; a policy with
``replay_turn`` (the LLM policies) rebuilds its conversation from the kept reply without a model
call; sampling seeds are a function of the seat and turn, so they need no restoring). A journal
that does not replay (another policy, config or engine) is said on stderr and the episode is
played from its first turn. Each decision's wall time (seconds from the policy call to its reply;
for a batched call, the whole batch's time, with the batch size) goes to the journal and to
``on_timing``, never into the record, whose bytes stay a function of the seed.
"""
from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Sequence

import socialgym_env
from socialgym_env.journal import append_journal, compact_journal, job_fingerprint
from socialgym_env.logs import append_episode

from .base import Decision

from .base import Request, seat_seed
from .jobs import failed_record, set_playbook

DEFAULT_MAX_CONCURRENT_EPISODES = 64


class InPlay(NamedTuple):
    """An episode in play, as ``on_tick`` reports it: its game, the turns played, the ticks of
    this run that decided for it (not those it waited out behind a policy's ``tick_limit``) and
    its episode id (so progress can tell which planned episode it is)."""
    game: str
    turns: int
    ticks: int
    episode_id: str


@dataclass
class _Live:
    index: int
    job: object
    env: object
    seat_spec: dict
    policies: dict = field(default_factory=dict)
    unjournaled: list = field(default_factory=list)   # decision groups since the last journal write
    timing: list = field(default_factory=list)        # [turn, seconds, batch] per decision applied
    journaled: bool = False                           # the journal holds lines of this episode
    fingerprint: Optional[str] = None                 # set when journaling: the job its lines belong to
    ticks: int = 0                                    # ticks of this run that decided for it (progress)


def _in_play(entry: _Live) -> InPlay:
    return InPlay(entry.job.game, len(entry.env.turns), entry.ticks, entry.job.episode_id)


def _request(env, live: _Live, agent: str, policy, offset: int) -> Request:
    info = env.decision_view(agent) if offset else env.infos[agent]
    if offset:
        info = dict(info, step=info["step"] + offset)
    parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
    return Request((live.job.episode_id, agent), env.observe(agent), info, parts)


def _start(index: int, job, pool, chain=None) -> _Live:
    """A live episode at its first turn, or at the end of its journaled ``chain`` when that
    replays (else, said on stderr, at its first turn)."""
    if chain:
        live = _start(index, job, pool)
        try:
            _replay_chain(live, chain)
            live.journaled = True
            return live
        except Exception as why:     # _NoReplay, or a journal the env or a policy chokes on: start afresh
            print(f"{job.episode_id}: its {len(chain)} journaled ticks do not replay ({why}); "
                  "played again from its first turn", file=sys.stderr)
    env = socialgym_env.make(job.game, **job.config)
    env.reset(seed=job.seed, options={"episode_id": job.episode_id})
    if len(job.seats) != len(env.possible_agents):
        raise ValueError(f"{job.game} has {len(env.possible_agents)} seats, the job gives {len(job.seats)} policies")
    live = _Live(index, job, env, dict(zip(env.possible_agents, job.specs)))
    for agent, spec in live.seat_spec.items():
        policy = pool.get(spec)
        live.policies[agent] = policy
        key = (job.episode_id, agent)
        policy.reset(key, seat_seed(job.game, job.seed, agent))
        set_playbook(policy, key, job.playbooks.get(agent))
    env.skip_dead()
    return live


class _NoReplay(Exception):
    """A journal chain that cannot be replayed into this job."""


def _fingerprint(job) -> str:
    return job_fingerprint(job.game, job.seed, job.config, job.seats, job.playbooks)


def _replay_chain(live: _Live, chain: list) -> None:
    """Apply the journaled decision groups to ``live`` (fresh from :func:`_start`), restoring
    each seat's policy state as the unbroken run had it (see the module docstring)."""
    env = live.env
    fingerprint = _fingerprint(live.job)
    for line in chain:
        if line.get("job") != fingerprint:
            raise _NoReplay("another config, roster or playbook")
        if not env.agents or len(env.turns) != line["turn"]:
            raise _NoReplay(f"turn {line['turn']} is not where the replay is")
        logged = {d.get("agent"): d for d in line["decisions"] if isinstance(d, dict)}
        actors = env.pending_actors()
        if set(logged) != set(actors):
            raise _NoReplay(f"turn {line['turn']}: {sorted(map(str, logged))} decided, {actors} due")
        decisions = []
        for offset, agent in enumerate(actors):
            policy, entry = live.policies[agent], logged[agent]
            request = _request(env, live, agent, policy, offset)
            if getattr(policy, "instant", False):
                again = policy.act_batch([request])[0].action
                if again != entry["action"]:
                    raise _NoReplay(f"turn {line['turn']}: {agent} now plays {again!r}, not {entry['action']!r}")
            elif hasattr(policy, "replay_turn"):
                policy.replay_turn(request, entry.get("reply") or "")
            else:
                raise _NoReplay(f"{getattr(policy, 'policy_id', type(policy).__name__)} cannot replay a turn")
            decisions.append((agent, Decision(entry["action"], entry.get("meta") or {})))
        before = len(env.turns)
        _apply(env, decisions)
        if len(env.turns) != line["after"]:
            raise _NoReplay(f"turn {line['turn']}: {len(env.turns) - before} turns played, the journal has "
                            f"{line['after'] - line['turn']}")
        live.timing += [[before + i, d.get("seconds"), d.get("batch")]
                        for i, d in enumerate(line["decisions"][:len(env.turns) - before])]


def _release(live: _Live) -> None:
    for agent, policy in live.policies.items():
        if hasattr(policy, "release"):
            policy.release((live.job.episode_id, agent))


def run_batched(jobs: Sequence, pool, log_path=None, progress: bool = False,
                max_concurrent_episodes: Optional[int] = None, on_record=None, on_tick=None,
                journal=None, on_timing=None) -> list[dict]:
    """Play ``jobs`` (already filtered for resume) with batched decisions; return their records
    in job order. Each record is appended to ``log_path`` (a path, or a function of the record
    giving one) as soon as its episode ends. ``on_tick(live, decisions)``, if given, is called
    after every tick with an :class:`InPlay` per live episode and the turns played so far, and
    once before the first decision (every ``ticks`` 0: the turns resumed from a journal).
    ``journal`` (a path, or a function of the job giving one) keeps the live episodes' turns
    and resumes the jobs it holds (see the module docstring); ``on_timing(record, timing)`` gets
    each finished episode's ``[turn, seconds, batch]`` list."""
    run = _BatchRun(jobs, pool, log_path, progress, max_concurrent_episodes, on_record, journal, on_timing)
    try:
        if on_tick is not None:
            # the state before any decision (turns resumed from a journal), so that progress
            # does not count them as this run's work
            run.fill()
            on_tick([_in_play(entry) for entry in run.live], sum(len(entry.env.turns) for entry in run.live))
        while run.queue or run.live:
            run.fill()
            requests = run.gather()          # 1. every due decision, grouped by policy
            decided, broken = run.decide(requests)   # 2. one act_batch per policy
            run.advance(decided, broken)     # 3. step every env in AEC order
            run.write_journal()              # 4. what the live episodes played this tick
            if on_tick is not None:
                # Only the ticks that decided for an episode: progress reads turns per tick as its
                # pace, and one waiting behind a tick limit would look slower than it will go once
                # the run thins out (the main job's bar said "ETA 22-31 min" with 1-2 min left).
                for entry in run.live:
                    entry.ticks += id(entry) in decided
                on_tick([_in_play(entry) for entry in run.live],
                        run.turns_done + sum(len(entry.env.turns) for entry in run.live))
        run.close_journal()
    finally:
        if run.bar:
            run.bar.close()
    return [run.records[i] for i in sorted(run.records)]


class _BatchRun:
    """The state of one :func:`run_batched` call: the queue, the live episodes, the records."""

    def __init__(self, jobs, pool, log_path, progress, max_concurrent_episodes, on_record, journal=None,
                 on_timing=None):
        self.pool, self.log_path, self.on_record, self.on_timing = pool, log_path, on_record, on_timing
        self.journal = journal
        self.chains: dict = {}           # episode id -> its journaled decision groups (resume)
        if journal is not None:
            by_path: dict = defaultdict(set)
            for job in jobs:
                by_path[self.journal_of(job)].add(job.episode_id)
            for path, keep in by_path.items():
                self.chains.update(compact_journal(path, keep))
        self.limit = max(1, max_concurrent_episodes or DEFAULT_MAX_CONCURRENT_EPISODES)
        self.jobs = list(enumerate(jobs))
        self.queue = self.jobs[::-1]
        self.live: list[_Live] = []
        self.records: dict = {}
        self.turns_done = 0              # turns of the episodes that ended (progress)
        self.bar = None
        if progress:
            from tqdm import tqdm
            self.bar = tqdm(total=len(jobs), desc="episodes", unit="ep")

    def journal_of(self, job):
        return self.journal(job) if callable(self.journal) else self.journal

    def finish(self, index, job, record, entry=None) -> None:
        if entry is not None:
            _release(entry)
            self.turns_done += len(entry.env.turns)
        if self.log_path:
            append_episode(self.log_path(record) if callable(self.log_path) else self.log_path, record)
        if entry is not None and entry.journaled:     # after the log line: a kill between loses nothing
            append_journal(self.journal_of(job), [{"episode_id": job.episode_id, "end": True}])
        if entry is not None and self.on_timing is not None:
            self.on_timing(record, entry.timing)
        self.records[index] = record
        if self.on_record:
            self.on_record(record)
        if self.bar:
            self.bar.update(1)
            self.bar.refresh()          # update() alone redraws at most every 0.1 s: the bar would lag the log

    def fail(self, index, job, err, entry=None) -> None:
        try:
            raise err
        except Exception as raised:   # so failed_record sees the traceback
            self.finish(index, job, failed_record(job, raised), entry)

    def fill(self) -> None:
        """Start queued jobs up to the limit; two jobs with one episode id never run at once
        (they would share seat caches)."""
        while self.queue and len(self.live) < self.limit:
            live_ids = {entry.job.episode_id for entry in self.live}
            ready = [i for i in range(len(self.queue) - 1, -1, -1) if self.queue[i][1].episode_id not in live_ids]
            if not ready:
                break
            index, job = self.queue.pop(ready[0])
            try:
                self.live.append(_start(index, job, self.pool, self.chains.pop(job.episode_id, None)))
                if self.journal is not None:
                    self.live[-1].fingerprint = _fingerprint(job)
            except Exception as err:
                self.fail(index, job, err)

    def gather(self) -> dict:
        """id(policy) -> (policy, [(live, agent, request)]) for every pending decision. Turns
        whose every actor is an instant (scripted) policy are played first, right away."""
        by_policy: dict = {}
        for entry in list(self.live):
            try:
                _play_instant_turns(entry)
                requests = [(agent, _request(entry.env, entry, agent, entry.policies[agent], offset))
                            for offset, agent in enumerate(entry.env.pending_actors())] if entry.env.agents else []
            except Exception as err:
                self.live.remove(entry)
                self.fail(entry.index, entry.job, err, entry)
                continue
            if not entry.env.agents:
                # Outside the try: an error logging a finished episode (a log path that is a
                # folder) is the caller's to see, not this episode's failure.
                self.end(entry)
                continue
            if _over_limit(by_policy, entry, requests):
                continue             # its turn waits a tick: the episodes started earlier go first
            for agent, request in requests:
                policy = entry.policies[agent]
                by_policy.setdefault(id(policy), (policy, []))[1].append((entry, agent, request))
        return by_policy

    @staticmethod
    def decide(by_policy: dict) -> tuple[dict, dict]:
        """(id(live) -> [(agent, decision, extra)], id(live) -> the exception its policy raised);
        ``extra`` is what the journal keeps beside the decision (wall time, batch, kept reply)."""
        decided: dict = defaultdict(list)
        broken: dict = {}
        for policy, items in by_policy.values():
            try:
                started = time.perf_counter()
                decisions = policy.act_batch([request for _, _, request in items])
                seconds = time.perf_counter() - started
                if len(decisions) != len(items):
                    raise RuntimeError(f"{policy.policy_id}: act_batch returned {len(decisions)} "
                                       f"decisions for {len(items)} requests")
            except Exception as err:
                for entry, _, _ in items:
                    broken.setdefault(id(entry), err)
                continue
            for (entry, agent, request), decision in zip(items, decisions):
                decided[id(entry)].append((agent, decision, _extra(policy, request, seconds, len(items))))
        return decided, broken

    def advance(self, decided: dict, broken: dict) -> None:
        for entry in list(self.live):
            try:
                if id(entry) in broken:
                    raise broken[id(entry)]
                _play_group(entry, decided.get(id(entry), []))
            except Exception as err:
                self.live.remove(entry)
                self.fail(entry.index, entry.job, err, entry)
                continue
            if not entry.env.agents:
                self.end(entry)

    def write_journal(self) -> None:
        """Append the decision groups each live episode played since the last write (one write
        per journal file). Episodes that ended meanwhile are in the log: nothing to keep."""
        if self.journal is None:
            return
        by_path: dict = defaultdict(list)
        for entry in self.live:
            if entry.unjournaled:
                by_path[self.journal_of(entry.job)].extend(entry.unjournaled)
                entry.unjournaled.clear()
                entry.journaled = True
        for path, lines in by_path.items():
            append_journal(path, lines)

    def close_journal(self) -> None:
        """Every job has its record in the log: the journal has nothing left to resume."""
        if self.journal is not None:
            for path in {self.journal_of(job) for _, job in self.jobs}:
                compact_journal(path, keep=())

    def end(self, entry) -> None:
        """Log a live episode that has ended."""
        self.live.remove(entry)
        job = entry.job
        record = entry.env.episode_record(policies=dict(zip(entry.env.possible_agents, job.seats)), playbooks=job.playbooks,
                                          extra={"tags": job.tags}, playbook_ids=job.playbook_ids)
        self.finish(entry.index, job, record, entry)


def _play_instant_turns(entry: _Live) -> None:
    """Step ``entry`` while every actor due is an instant policy. Without this a scripted seat's
    turn would take a whole tick (a model forward pass elsewhere): a Resistance episode with two
    model seats of five would need a tick per turn, not per model decision. Requests are built
    as in a tick (all of a simultaneous phase before any step), so records do not change."""
    env = entry.env
    while env.agents:
        actors = env.pending_actors()
        if not actors or not all(getattr(entry.policies[a], "instant", False) for a in actors):
            return
        decisions = []
        for offset, agent in enumerate(actors):
            policy = entry.policies[agent]
            request = _request(env, entry, agent, policy, offset)
            started = time.perf_counter()
            decision = policy.act_batch([request])[0]
            decisions.append((agent, decision, _extra(policy, request, time.perf_counter() - started, 1)))
        _play_group(entry, decisions)


def _extra(policy, request, seconds: float, batch: int) -> dict:
    """What the journal keeps beside a decision: its wall time (the whole ``act_batch`` call that
    made it, ``batch`` decisions), and the reply an LLM seat kept in its conversation."""
    extra = {"seconds": round(seconds, 6), "batch": batch}
    kept_reply = getattr(policy, "kept_reply", None)
    if kept_reply is not None:
        extra["reply"] = kept_reply(request.key)
    return extra


def _over_limit(by_policy: dict, entry, requests) -> bool:
    """Whether ``entry``'s requests would take a policy past its ``tick_limit`` (decisions it
    takes per tick) this tick; a policy with no request yet always takes an episode's whole group."""
    asked = Counter(id(entry.policies[agent]) for agent, _ in requests)
    for key, count in asked.items():
        if key in by_policy:          # taken: this tick's requests for that policy so far
            policy, taken = by_policy[key]
            limit = getattr(policy, "tick_limit", None)
            if limit and len(taken) + count > limit:
                return True
    return False


def _play_group(entry: _Live, decided: list) -> None:
    """Step ``entry`` with one tick's ``(agent, decision, extra)`` and note the group for the
    journal and the timing."""
    env = entry.env
    order = {a: i for i, a in enumerate(env.pending_actors())}
    decided = sorted(decided, key=lambda item: order.get(item[0], 0))
    before = len(env.turns)
    stepped = _apply(env, [(agent, decision) for agent, decision, _ in decided])
    if not decided:
        return
    entry.timing += [[before + i, extra["seconds"], extra["batch"]] for i, (_, _, extra) in enumerate(decided[:stepped])]
    if entry.fingerprint is None:       # not journaling
        return
    entry.unjournaled.append({"episode_id": entry.job.episode_id, "job": entry.fingerprint, "turn": before,
                              "after": len(env.turns),
                              "decisions": [dict(extra, agent=agent, action=decision.action, meta=decision.meta)
                                            for agent, decision, extra in decided]})


def _apply(env, decisions: list) -> int:
    """Step one env with its decisions in AEC order; stop where the game ended or moved on.
    Returns how many decisions were stepped."""
    order = {a: i for i, a in enumerate(env.pending_actors())}
    stepped = 0
    for agent, decision in sorted(decisions, key=lambda ad: order.get(ad[0], 0)):
        if not env.agents or env.agent_selection != agent or env.terminations[agent] or env.truncations[agent]:
            break                       # the game ended (or moved on) mid-phase
        if decision.error is not None:
            raise decision.error
        env.step(decision.action)
        stepped += 1
        if decision.meta:
            env.annotate_last_turn(agent_meta=decision.meta)
    env.skip_dead()
    return stepped
