"""Play episodes: seats get policies, decisions go to the env, finished episodes go to the log.

``run_jobs`` is the entry point the CLI and the tournament use. Each job is one episode; a job
whose id is already in the log is skipped (resume). An episode that raises (a model server
down, a policy bug) is written as a failed record with the reason — never silently dropped.
``run_jobs`` plays the jobs with the batched runner (:mod:`socialgym_agents.batched`: many envs at once,
one ``act_batch`` per policy per tick); ``play_episode`` is the plain sequential loop, kept as
the reference the batched runner is tested against.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import socialgym_env
from socialgym_env.logs import completed_episode_ids

from .base import Decision, Request, seat_seed
from .batched import InPlay, run_batched
from .jobs import EpisodeJob, PolicyPool, failed_record, set_playbook

__all__ = ["EpisodeJob", "InPlay", "PolicyPool", "failed_record", "play_episode", "run_jobs"]


def play_episode(job: EpisodeJob, pool: PolicyPool, on_turn: Optional[Callable] = None) -> dict:
    """Play one job to the end and return its episode record. ``on_turn(env, agent, decision,
    policy)`` is called before each decision (``decision`` None) and after it was played (the
    terminal table of ``socialgym play`` with a human seat: who is thinking, who moved)."""
    env = socialgym_env.make(job.game, **job.config)
    env.reset(seed=job.seed, options={"episode_id": job.episode_id})
    if len(job.seats) != len(env.possible_agents):
        raise ValueError(f"{job.game} has {len(env.possible_agents)} seats, the job gives {len(job.seats)} policies")
    seat_spec = dict(zip(env.possible_agents, job.specs))
    for agent, spec in seat_spec.items():
        policy = pool.get(spec)
        key = (job.episode_id, agent)
        policy.reset(key, seat_seed(job.game, job.seed, agent))
        set_playbook(policy, key, job.playbooks.get(agent))
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        policy = pool.get(seat_spec[agent])
        parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
        request = Request((job.episode_id, agent), env.observe(agent), info, parts)
        if on_turn:
            on_turn(env, agent, None, policy)
        decision: Decision = policy.act_batch([request])[0]
        if decision.error is not None:
            raise decision.error
        env.step(decision.action)
        if decision.meta:
            env.annotate_last_turn(agent_meta=decision.meta)
        if on_turn:
            on_turn(env, agent, decision, policy)
    for agent, spec in seat_spec.items():
        policy = pool.get(spec)
        if hasattr(policy, "release"):
            policy.release((job.episode_id, agent))
    return env.episode_record(policies=dict(zip(env.possible_agents, job.seats)), playbooks=job.playbooks, extra={"tags": job.tags},
                              playbook_ids=job.playbook_ids)


def run_jobs(jobs: Sequence[EpisodeJob], pool: Optional[PolicyPool] = None, log_path=None,
             resume: bool = True, progress: bool = False,
             max_concurrent_episodes: Optional[int] = None,
             on_record: Optional[Callable[[dict], None]] = None,
             on_tick: Optional[Callable[[list, int], None]] = None, journal=None,
             on_timing: Optional[Callable[[dict, list], None]] = None) -> list[dict]:
    """Play every job (skipping those already logged when ``resume``); return the new records
    in job order. Up to ``max_concurrent_episodes`` episodes (default 64) are played at once by
    the batched runner; each is appended to ``log_path`` as soon as it ends. With
    ``max_concurrent_episodes=1`` the jobs run one after another, in order. ``log_path`` may be
    a function of the record (one log per game); ``on_record`` is called as each one ends,
    ``on_tick([InPlay(game, turns, ticks, episode_id) of each episode in play], decisions so
    far)`` after every round of decisions (progress). ``journal`` (a path, or a function of the
    job) keeps the turns of the episodes in play so a killed run resumes them where they were;
    ``on_timing(record, [[turn, seconds, batch], ...])`` gets each finished episode's decision
    times (see :mod:`socialgym_agents.batched`)."""
    pool = pool or PolicyPool()
    # With a per-record log function the caller resumes (it knows every log); here only a path.
    done = completed_episode_ids(log_path) if (log_path and resume and not callable(log_path)) else set()
    todo = [j for j in jobs if j.episode_id not in done]
    return run_batched(todo, pool, log_path=log_path, progress=progress,
                       max_concurrent_episodes=max_concurrent_episodes, on_record=on_record, on_tick=on_tick,
                       journal=journal, on_timing=on_timing)
