"""Play episodes: seats get policies, decisions go to the env, finished episodes go to the log.

``run_jobs`` is the entry point the CLI and the tournament use. Each job is one episode; a job
whose id is already in the log is skipped (resume). An episode that raises (a model server
down, a policy bug) is written as a failed record with the reason — never silently dropped.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import socialgym_env
from socialgym_env.logs import append_episode, completed_episode_ids

from .base import Decision, Request
from .registry import make_policy


@dataclass
class EpisodeJob:
    """One episode to play: the game, its seed and config, and a policy spec per seat."""

    game: str
    seed: int
    seats: Sequence[str]
    config: dict = field(default_factory=dict)
    episode_id: Optional[str] = None
    playbooks: dict = field(default_factory=dict)   # seat -> playbook text
    tags: dict = field(default_factory=dict)        # free-form (tournament round, matchup)

    def __post_init__(self):
        if self.episode_id is None:
            self.episode_id = f"{self.game}-{self.seed}-" + "+".join(self.seats)


class PolicyPool:
    """Policies by spec, built once and shared by every episode (so an LLM loads once)."""

    def __init__(self, seed: int = 0, prebuilt: Optional[dict] = None):
        self.seed = seed
        self.policies = dict(prebuilt or {})

    def get(self, spec: str):
        if spec not in self.policies:
            self.policies[spec] = make_policy(spec, seed=self.seed)
        return self.policies[spec]


def _set_playbook(policy, key, playbook):
    if playbook and hasattr(policy, "set_playbook"):
        policy.set_playbook(key, playbook)


def play_episode(job: EpisodeJob, pool: PolicyPool, on_step: Optional[Callable] = None) -> dict:
    """Play one job to the end and return its episode record."""
    env = socialgym_env.make(job.game, **job.config)
    env.reset(seed=job.seed, options={"episode_id": job.episode_id})
    if len(job.seats) != len(env.possible_agents):
        raise ValueError(f"{job.game} has {len(env.possible_agents)} seats, the job gives {len(job.seats)} policies")
    seat_spec = dict(zip(env.possible_agents, job.seats))
    for agent, spec in seat_spec.items():
        policy = pool.get(spec)
        key = (job.episode_id, agent)
        policy.reset(key, job.seed)
        _set_playbook(policy, key, job.playbooks.get(agent))
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        policy = pool.get(seat_spec[agent])
        request = Request((job.episode_id, agent), env.observe(agent), info)
        decision: Decision = policy.act_batch([request])[0]
        env.step(decision.action)
        if decision.meta:
            env.annotate_last_turn(agent_meta=decision.meta)
        if on_step:
            on_step()
    return env.episode_record(policies=seat_spec, playbooks=job.playbooks, extra={"tags": job.tags})


def failed_record(job: EpisodeJob, error: BaseException) -> dict:
    """A log record for an episode that could not be completed, with the reason."""
    from socialgym_env.env import LOG_SCHEMA
    return {"schema": LOG_SCHEMA, "episode_id": job.episode_id, "game": job.game, "seed": job.seed,
            "config": job.config, "roster": [{"agent": f"player_{i}", "policy": s} for i, s in enumerate(job.seats)],
            "turns": [], "scores": None, "rewards": None, "finished": False, "failed": True,
            "error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc(limit=5),
            "tags": job.tags}


def run_jobs(jobs: Sequence[EpisodeJob], pool: Optional[PolicyPool] = None, log_path=None,
             resume: bool = True, progress: bool = False) -> list[dict]:
    """Play every job (skipping those already logged when ``resume``); return the new records."""
    pool = pool or PolicyPool()
    done = completed_episode_ids(log_path) if (log_path and resume) else set()
    todo = [j for j in jobs if j.episode_id not in done]
    records = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc="episodes", unit="ep")
    for job in todo:
        try:
            record = play_episode(job, pool)
        except Exception as err:  # the failure is the record; the run goes on
            record = failed_record(job, err)
        if log_path:
            append_episode(log_path, record)
        records.append(record)
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    return records
