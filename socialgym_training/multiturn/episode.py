"""One learner's episode as a training row, what a GRPO group shares, and the rows as TRL's
``rollout_func`` returns them."""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional, Sequence


@dataclass(frozen=True)
class EpisodeSpec:
    """What a GRPO group shares: the game, its config, the seed, the learner's seat or role and
    the opponents. Serialised as the dataset's prompt string (TRL passes only prompts to a
    rollout function)."""

    game: str
    seed: int
    seat: str
    opponents: tuple
    config: tuple = ()            # sorted (key, value) pairs

    def prompt(self) -> str:
        return json.dumps({"game": self.game, "seed": self.seed, "seat": self.seat,
                           "opponents": list(self.opponents), "config": dict(self.config)}, sort_keys=True)

    @classmethod
    def from_prompt(cls, text: str) -> "EpisodeSpec":
        data = json.loads(text)
        return cls(data["game"], int(data["seed"]), data["seat"], tuple(data["opponents"]),
                   tuple(sorted(data.get("config", {}).items())))

    def env_key(self) -> tuple:
        """Episodes with equal keys can share one vector env (everything but the seed)."""
        return (self.game, self.seat, self.opponents, self.config)


def episode_specs(game: str, seat: str, opponents: Sequence[str], seeds: Sequence[int], config: dict) -> list:
    return [EpisodeSpec(game, int(seed), seat, tuple(opponents), tuple(sorted(config.items()))) for seed in seeds]


@dataclass
class Episode:
    spec: EpisodeSpec
    prompt_ids: list = field(default_factory=list)
    completion_ids: list = field(default_factory=list)
    env_mask: list = field(default_factory=list)
    replies: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    reward: float = 0.0                 # the terminal outcome reward
    invalid_actions: int = 0
    role: str = ""
    learner: str = ""
    truncated: bool = False
    logprobs: Optional[list] = None     # per completion token (vLLM's sampling log-probs; env tokens 0.0)
    outside_row: int = 0                # decisions played but not in the row (policy layout: see PolicySeat)

    def shaped_reward(self, invalid_penalty: float) -> float:
        return self.reward - invalid_penalty * self.invalid_actions


    def add_reply(self, text: str, action, reply_ids, reply_logprobs=None) -> None:
        """Append one learner reply (in the loss) and, from vLLM, its per-token log-probs."""
        if reply_logprobs is not None:
            if len(reply_logprobs) != len(reply_ids):
                raise ValueError(f"{len(reply_logprobs)} log-probs for {len(reply_ids)} reply tokens")
            self.logprobs = ([0.0] * len(self.completion_ids) if self.logprobs is None
                             else self.logprobs) + list(reply_logprobs)
        self.replies.append(text)
        self.actions.append(action)
        self.completion_ids += list(reply_ids)
        self.env_mask += [1] * len(reply_ids)

    def add_env_turn(self, env_ids: list) -> None:
        """Append the env's tokens between two replies (never in the loss; log-prob 0)."""
        self.completion_ids += env_ids
        self.env_mask += [0] * len(env_ids)
        if self.logprobs is not None:
            self.logprobs += [0.0] * len(env_ids)


def rollout_output(episodes: Sequence[Episode], invalid_penalty: float = 0.0) -> dict:
    """The dict a TRL ``rollout_func`` returns: ids, ``env_mask`` (TRL's multi-turn loss mask),
    the sampling log-probability of every completion token when the replies came from vLLM
    (env tokens 0.0: the mask takes them out of the importance-sampling correction; None with HF
    generation, where TRL does not use them), and per-episode fields that TRL forwards to the
    reward functions."""
    return {
        "prompt_ids": [e.prompt_ids for e in episodes],
        "completion_ids": [e.completion_ids for e in episodes],
        "env_mask": [e.env_mask for e in episodes],
        "logprobs": episode_logprobs(episodes),
        "episode_reward": [e.shaped_reward(invalid_penalty) for e in episodes],
        "outcome_reward": [e.reward for e in episodes],
        "invalid_actions": [e.invalid_actions for e in episodes],
        "role": [e.role for e in episodes],
    }


def episode_logprobs(episodes: Sequence[Episode]) -> Optional[list]:
    """The ``logprobs`` of a rollout: None when no reply came from vLLM (HF generation); else one
    list per episode, never None (TRL's importance-sampling correction takes no gaps): an episode
    whose learner never replied (its completion is env text only, all masked out) gets 0.0 per
    token. An episode with learner tokens but no log-probabilities cannot be corrected: an error."""
    if not any(e.logprobs is not None for e in episodes):
        return None
    out = []
    for e in episodes:
        if e.logprobs is None:
            if any(e.env_mask):
                raise ValueError(f"episode {e.spec.seed}: learner tokens without sampling log-probabilities")
            out.append([0.0] * len(e.completion_ids))
        else:
            out.append(e.logprobs)
    return out


def role_summary(episodes: Sequence[Episode]) -> dict:
    """Mean outcome reward and count per learner role (role-conditioned reporting)."""
    by_role: dict = defaultdict(list)
    for e in episodes:
        by_role[e.role or "?"].append(e.reward)
    return {role: (sum(r) / len(r), len(r)) for role, r in sorted(by_role.items())}
