"""The batched rollout runner: many episodes at once, every pending decision in one batch per policy.

Each tick:

1. keep up to ``max_concurrent_episodes`` envs live (any mix of games and seats; new jobs start
   as others finish);
2. gather every decision that is due now: for each live env, ``env.pending_actors()`` (the
   one seat to move, or every remaining actor of a simultaneous phase, whose decisions are
   independent); turns whose every actor is an ``instant`` policy (the scripted ones) are
   played on the spot first, so a tick is spent only on decisions that batch;
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
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional, Sequence

import socialgym_env
from socialgym_env.logs import append_episode

from .base import Request, seat_seed
from .jobs import failed_record, set_playbook

DEFAULT_MAX_CONCURRENT_EPISODES = 64


@dataclass
class _Live:
    index: int
    job: object
    env: object
    seat_spec: dict
    policies: dict = field(default_factory=dict)


def _request(env, live: _Live, agent: str, policy, offset: int) -> Request:
    info = env.decision_view(agent) if offset else env.infos[agent]
    if offset:
        info = dict(info, step=info["step"] + offset)
    parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
    return Request((live.job.episode_id, agent), env.observe(agent), info, parts)


def _start(index: int, job, pool) -> _Live:
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


def _release(live: _Live) -> None:
    for agent, policy in live.policies.items():
        if hasattr(policy, "release"):
            policy.release((live.job.episode_id, agent))


def run_batched(jobs: Sequence, pool, log_path=None, progress: bool = False,
                max_concurrent_episodes: Optional[int] = None, on_record=None, on_tick=None) -> list[dict]:
    """Play ``jobs`` (already filtered for resume) with batched decisions; return their records
    in job order. Each record is appended to ``log_path`` (a path, or a function of the record
    giving one) as soon as its episode ends. ``on_tick(games, decisions)``, if given, is called
    after every tick with the games of the live episodes and the turns played so far."""
    run = _BatchRun(jobs, pool, log_path, progress, max_concurrent_episodes, on_record)
    try:
        while run.queue or run.live:
            run.fill()
            requests = run.gather()          # 1. every due decision, grouped by policy
            decided, broken = run.decide(requests)   # 2. one act_batch per policy
            run.advance(decided, broken)     # 3. step every env in AEC order
            if on_tick is not None:
                on_tick([entry.job.game for entry in run.live],
                        run.turns_done + sum(len(entry.env.turns) for entry in run.live))
    finally:
        if run.bar:
            run.bar.close()
    return [run.records[i] for i in sorted(run.records)]


class _BatchRun:
    """The state of one :func:`run_batched` call: the queue, the live episodes, the records."""

    def __init__(self, jobs, pool, log_path, progress, max_concurrent_episodes, on_record):
        self.pool, self.log_path, self.on_record = pool, log_path, on_record
        self.limit = max(1, max_concurrent_episodes or DEFAULT_MAX_CONCURRENT_EPISODES)
        self.queue = list(enumerate(jobs))[::-1]
        self.live: list[_Live] = []
        self.records: dict = {}
        self.turns_done = 0              # turns of the episodes that ended (progress)
        self.bar = None
        if progress:
            from tqdm import tqdm
            self.bar = tqdm(total=len(jobs), desc="episodes", unit="ep")

    def finish(self, index, job, record, entry=None) -> None:
        if entry is not None:
            _release(entry)
            self.turns_done += len(entry.env.turns)
        if self.log_path:
            append_episode(self.log_path(record) if callable(self.log_path) else self.log_path, record)
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
                self.live.append(_start(index, job, self.pool))
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
            for agent, request in requests:
                policy = entry.policies[agent]
                by_policy.setdefault(id(policy), (policy, []))[1].append((entry, agent, request))
        return by_policy

    @staticmethod
    def decide(by_policy: dict) -> tuple[dict, dict]:
        """(id(live) -> [(agent, decision)], id(live) -> the exception its policy raised)."""
        decided: dict = defaultdict(list)
        broken: dict = {}
        for policy, items in by_policy.values():
            try:
                decisions = policy.act_batch([request for _, _, request in items])
                if len(decisions) != len(items):
                    raise RuntimeError(f"{policy.policy_id}: act_batch returned {len(decisions)} "
                                       f"decisions for {len(items)} requests")
            except Exception as err:
                for entry, _, _ in items:
                    broken.setdefault(id(entry), err)
                continue
            for (entry, agent, _), decision in zip(items, decisions):
                decided[id(entry)].append((agent, decision))
        return decided, broken

    def advance(self, decided: dict, broken: dict) -> None:
        for entry in list(self.live):
            try:
                if id(entry) in broken:
                    raise broken[id(entry)]
                _apply(entry.env, decided.get(id(entry), []))
            except Exception as err:
                self.live.remove(entry)
                self.fail(entry.index, entry.job, err, entry)
                continue
            if not entry.env.agents:
                self.end(entry)

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
            decisions.append((agent, policy.act_batch([_request(env, entry, agent, policy, offset)])[0]))
        _apply(env, decisions)


def _apply(env, decisions: list) -> None:
    """Step one env with its decisions in AEC order; stop where the game ended or moved on."""
    order = {a: i for i, a in enumerate(env.pending_actors())}
    for agent, decision in sorted(decisions, key=lambda ad: order.get(ad[0], 0)):
        if not env.agents or env.agent_selection != agent or env.terminations[agent] or env.truncations[agent]:
            break                       # the game ended (or moved on) mid-phase
        if decision.error is not None:
            raise decision.error
        env.step(decision.action)
        if decision.meta:
            env.annotate_last_turn(agent_meta=decision.meta)
    env.skip_dead()
