"""Episode jobs, the shared policy pool and the failed-episode record: what both runners
(the sequential :mod:`socialgym_agents.runner` and the batched :mod:`socialgym_agents.batched`) need, kept here so
that neither imports the other's internals."""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Optional, Sequence

from socialgym_env.actions import MAX_LOG_TEXT_CHARS, clip

from .registry import check_spec, make_policy
from .specs import AgentSpec


@dataclass
class EpisodeJob:
    """One episode to play: the game, its seed and config, and a policy spec per seat.

    ``seats`` may hold AgentSpecs or spec strings; they are parsed here, once, into ``specs``
    (what the workers use) and ``seats`` keeps their canonical strings (what logs carry)."""

    game: str
    seed: int
    seats: Sequence
    config: dict = field(default_factory=dict)
    episode_id: Optional[str] = None
    playbooks: dict = field(default_factory=dict)   # seat -> playbook text
    playbook_ids: dict = field(default_factory=dict)  # seat -> playbook id (SPaRTan), logged in the roster
    tags: dict = field(default_factory=dict)        # free-form (tournament round, matchup)

    specs: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.specs = tuple(AgentSpec.of(seat) for seat in self.seats)
        self.seats = [str(spec) for spec in self.specs]
        if self.episode_id is None:
            self.episode_id = f"{self.game}-{self.seed}-" + "+".join(self.seats)


class PolicyPool:
    """Policies by AgentSpec, built once and shared by every episode (so an LLM loads once).
    Specs given as strings (``prebuilt`` keys, ``check``/``get`` arguments) are parsed on entry."""

    def __init__(self, seed: int = 0, prebuilt: Optional[dict] = None):
        self.seed = seed
        self.policies = {AgentSpec.of(spec): policy for spec, policy in (prebuilt or {}).items()}

    def check(self, spec, games=None) -> None:
        """:func:`check_spec` (PolicySpecError before anything is played), except for a
        policy the pool already holds (built before, or handed in prebuilt)."""
        spec = AgentSpec.of(spec)
        if spec not in self.policies:
            check_spec(spec, games)

    def get(self, spec):
        spec = AgentSpec.of(spec)
        if spec not in self.policies:
            self.policies[spec] = make_policy(spec, seed=self.seed)
        return self.policies[spec]


def set_playbook(policy, key, playbook):
    if playbook and hasattr(policy, "set_playbook"):
        policy.set_playbook(key, playbook)


def failed_record(job: EpisodeJob, error: BaseException) -> dict:
    """A log record for an episode that could not be completed, with the reason."""
    from socialgym_env.env import LOG_SCHEMA
    return {"schema": LOG_SCHEMA, "episode_id": job.episode_id, "game": job.game, "seed": job.seed,
            "config": job.config, "roster": [{"agent": f"player_{i}", "policy": s} for i, s in enumerate(job.seats)],
            "turns": [], "scores": None, "rewards": None, "finished": False, "failed": True,
            "error": clip(f"{type(error).__name__}: {error}"),
            "traceback": clip("".join(traceback.format_exception(type(error), error, error.__traceback__, limit=5)),
                              4 * MAX_LOG_TEXT_CHARS),
            "tags": job.tags}
