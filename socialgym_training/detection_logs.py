"""Build the episode logs the detector and ANIL learn from: N episodes per hidden-role game in
which every seat's talk is written by a language model (by default the embedded SmolLM2), so a
detector cannot learn scripted templates by rote.

Every seat plays ``TalkPolicy``: free-text decisions (say, clue, ask, describe, vote reasons:
the requests without a finite ``legal_action_list``) go to the language model, finite ones
(votes, bids, night actions, mission cards) to the per-game scripted baseline. A 135M model on two
shared CPU cores makes a few decisions per second, so the model writes what the detector reads
and the cheap choices stay cheap (``--finite_policy smollm2`` gives the model every decision).

    python -m socialgym_training.detection_logs --out runs/detect_lm/logs --episodes 30

Writes ``OUT/<game>.jsonl`` in the standard episode-log format (``socialgym_env.logs``). Resumable:
episode ids are fixed by (seed, game, index), so running the same command again plays only the
episodes not yet logged, and raising ``--episodes`` adds episodes without replaying the others.
Jobs are interleaved across games (episode 0 of every game, then episode 1, ...) so a run stopped
early still leaves every game with about the same number of episodes.

Games are played in short configurations (``SHORT_CONFIGS``: fewer rounds and a turn cap) because
a 135M model on two CPU cores makes a few decisions per second; a detector only needs the talk up
to a cut point, so a truncated episode is still a useful example.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from socialgym_training.configs import RunArgs
import socialgym_env
from socialgym_agents.base import Decision, Request
from socialgym_agents.registry import make_policy
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_env.logs import completed_episode_ids

# The hidden side of each hidden-role game, by roster team name.
HIDDEN_TEAMS = {
    "werewolves": {"werewolves"},
    "triadic_werewolf": {"werewolves"},
    "chameleon": {"chameleon"},
    "spyfall": {"spy"},
    "undercover": {"undercovers"},
    "resistance": {"spies"},
    "insider": {"insider"},
}
DETECTION_GAMES = tuple(HIDDEN_TEAMS)

# Short games: a couple of rounds and an engine turn cap (decisions per episode).
SHORT_CONFIGS = {
    "werewolves": {"max_cycles": 2, "max_steps": 30},
    "triadic_werewolf": {"max_debate_turns": 3, "max_explanation_turns": 1, "max_days": 1, "max_steps": 60},
    "chameleon": {"max_steps": 30},
    "spyfall": {"rounds": 2, "max_steps": 30},
    "undercover": {"rounds": 2, "max_steps": 30},
    "resistance": {"max_steps": 30},
    "insider": {"questions": 6, "max_steps": 30},
}


@dataclass
class Config(RunArgs):
    episodes: int = 30
    """Episodes per game"""
    games: str = ",".join(DETECTION_GAMES)
    """Comma-separated subset of the hidden-role games"""
    talk_policy: str = "smollm2?max_new_tokens=40&dtype=auto"
    """Policy that writes every free-text action"""
    finite_policy: str = "scripted:heuristic"
    """Policy that takes every choice from a finite list"""
    max_concurrent: int = 32
    """Episodes played at once by the batched runner"""
    # defaults of this script (the options are documented in socialgym_training.configs; one
    # <game>.jsonl per game goes to --out, the seed is that of the first episode)
    out: str = "runs/detect_lm/logs"


class TalkPolicy:
    """Free-text requests to one policy, finite-choice requests to another (see the docstring)."""

    needs_prompt_parts = True

    def __init__(self, talk, finite):
        self.talk, self.finite = talk, finite
        self.policy_id = f"talk={getattr(talk, 'policy_id', talk)};finite={getattr(finite, 'policy_id', finite)}"

    @staticmethod
    def is_talk(request: Request) -> bool:
        return "legal_action_list" not in request.info

    def act_batch(self, requests) -> list[Decision]:
        talk = [i for i, r in enumerate(requests) if self.is_talk(r)]
        finite = [i for i, r in enumerate(requests) if not self.is_talk(r)]
        out: list = [None] * len(requests)
        for policy, idx in ((self.talk, talk), (self.finite, finite)):
            if idx:
                for i, decision in zip(idx, policy.act_batch([requests[i] for i in idx])):
                    out[i] = decision
        return out

    def _each(self, method: str, *args) -> None:
        for policy in (self.talk, self.finite):
            if hasattr(policy, method):
                getattr(policy, method)(*args)

    def reset(self, key, seed=None) -> None:
        self._each("reset", key, seed)

    def release(self, key) -> None:
        self._each("release", key)

    def set_playbook(self, key, text) -> None:
        self._each("set_playbook", key, text)


def seat_spec(cfg: "Config") -> str:
    """The roster's policy string for a seat (also the pool key of the composite policy)."""
    return f"talk:{cfg.talk_policy}|finite:{cfg.finite_policy}"


def make_pool(cfg: "Config") -> PolicyPool:
    policy = TalkPolicy(make_policy(cfg.talk_policy, seed=cfg.seed), make_policy(cfg.finite_policy, seed=cfg.seed))
    return PolicyPool(seed=cfg.seed, prebuilt={seat_spec(cfg): policy})


def episode_seed(seed: int, game: str, index: int) -> int:
    digest = hashlib.sha256(f"{seed}|{game}|{index}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def parse_games(text: str) -> list[str]:
    games = [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in games if g not in HIDDEN_TEAMS]
    if unknown or not games:
        raise ValueError(f"unknown detection game(s) {unknown}; valid: {', '.join(DETECTION_GAMES)}")
    return games


def plan_jobs(cfg: Config) -> list[EpisodeJob]:
    """Every episode of the dataset, interleaved across games (index-major)."""
    games = parse_games(cfg.games)
    seats = {g: len(socialgym_env.make(g, **SHORT_CONFIGS[g]).possible_agents) for g in games}
    jobs = []
    for index in range(cfg.episodes):
        for game in games:
            s = episode_seed(cfg.seed, game, index)
            jobs.append(EpisodeJob(game=game, seed=s, seats=[seat_spec(cfg)] * seats[game],
                                   config=dict(SHORT_CONFIGS[game]),
                                   episode_id=f"{game}|detect|e{index:04d}|s{s}",
                                   tags={"dataset": "detection", "talk_policy": cfg.talk_policy,
                                         "finite_policy": cfg.finite_policy, "episode_index": index}))
    return jobs


def pending_jobs(jobs: list[EpisodeJob], out: Path) -> list[EpisodeJob]:
    done = set()
    for game in {j.game for j in jobs}:
        done |= completed_episode_ids(out / f"{game}.jsonl")
    return [j for j in jobs if j.episode_id not in done]


def build(cfg: Config, pool: PolicyPool | None = None) -> int:
    """Play the episodes not yet in ``cfg.out``; return how many were played."""
    out = Path(cfg.out)
    todo = pending_jobs(plan_jobs(cfg), out)
    if not todo:
        return 0
    records = run_jobs(todo, pool=pool or make_pool(cfg), resume=False,
                       log_path=lambda record: out / f"{record['game']}.jsonl",
                       max_concurrent_episodes=cfg.max_concurrent, progress=True)
    return len(records)


def _main() -> None:
    from socialgym_training.common import parse_config
    config = parse_config(Config)
    played = build(config)
    print(f"played {played} episodes; logs in {config.out}")


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(_main, "socialgym_training.detection_logs")
