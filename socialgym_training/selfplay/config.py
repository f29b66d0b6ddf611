"""Self-play RL for a LoRA policy: one model plays every seat, against itself and its past checkpoints.

The options of ``python -m socialgym_training.selfplay`` (:class:`Config`, every field with its
help line; the first line above is its ``--help`` description) and what they derive: the game's
arguments, the trained teams, the options of the LLM policy that plays a checkpoint as trained."""
from __future__ import annotations

import json
from dataclasses import dataclass

from socialgym_training.configs import LoraArgs, ModelArgs, PlayArgs, RLArgs, RunArgs
from socialgym_training.multiturn.layouts import policy_options


@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, RLArgs, PlayArgs):
    num_players: int = 0
    """players (0 = the game's default)"""
    game_config: str = ""
    """extra game config as JSON, e.g. '{"dice": 1}'"""
    episodes_per_step: int = 8
    """episodes played per step (at most; stops once the rows are full)"""
    group_size: int = 1
    """episodes per GRPO group: each group replays one seed (so one role deal) and one seating;
    --episodes_per_step is rounded up to whole groups"""
    rows_per_step: int = 12
    """training rows (learner seats) per step: TRL's batch"""
    self_play: float = 0.5
    """probability an episode is against the current policy itself (else a pool checkpoint)"""
    pool_size: int = 4
    """past checkpoints kept in the opponent pool (the base model is the first)"""
    fixed_opponents: str = ""
    """comma-separated frozen opponents that are not checkpoints (policy specs, e.g. scripted:heuristic)"""
    fixed_share: float = 0.5
    """when an episode is not self-play: probability its opponent is one of --fixed_opponents (else a checkpoint)"""
    train_teams: str = ""
    """comma-separated teams whose seats are trained (empty: every team); the policy's seats on
    other teams play but are frozen, and against an opponent the policy takes one of these teams"""
    snapshot_every: int = 5
    """steps between checkpoints added to the pool (and saved for the tournament)"""
    baseline_rate: float = 0.05
    """RAE: per-(game, role) EMA rate, b <- b + rate (R - b)"""
    advantage: str = "rae"
    """rae: every turn of a row gets its reward minus the role's moving average; turn: each turn
    gets the return that follows it, normalised per --turn_norm (MARSHAL-style, docs/selfplay.md)"""
    turn_discount: float = 1.0
    """turn: discount of later rewards in a turn's return"""
    turn_norm: str = "role"
    """turn: normalise per role (the RAE key) or per agent (the seat)"""
    reward: str = "auto"
    """row reward: score (chips), outcome (+1/0/-1) or auto (score if the game ranks by score)"""
    bf16: bool = False
    """bfloat16 autocast for the rollouts' scoring and the training passes (a CPU with native
    bfloat16, e.g. avx512_bf16 or AMX, or a GPU); off: float32, as the runs documented before it"""
    live_episodes: int = 16
    """episodes played in lockstep at a time (rollouts, evaluation); 0: all at once"""
    cache_mb: int = 1536
    """per-seat key/value caches of the scoring passes (MB; a seat's next decision encodes only
    what is new to it); 0: every context encoded whole"""
    talk: str = "free"
    """talk turns (only say/pass offered) of the model's seats: free (generated under the reply
    grammar, in the rows) or pass (silent, no model call, not in the rows; the LLM option talk=pass
    plays a checkpoint so); for opponents that do not read talk"""
    tournament_episodes: int = 40
    """episodes per pair of checkpoints in the closing tournament (0 = none)"""
    save_every: int = 5
    """steps between resumable checkpoints (optimizer, scheduler, RNG, pool, baselines) in
    <out>/trainer/checkpoint-<N>; 0 = none"""
    resume: bool = False
    """continue from the last resumable checkpoint in --out (a fresh start if there is none): the
    same command run again picks up where a stopped piece ended"""
    piece_steps: int = 0
    """end this run after this many steps (saving a resumable checkpoint there; no evaluation),
    a piece that --resume continues; 0 = run to --steps"""
    evaluate: str = ""
    """folder of an earlier run: rate its saved checkpoints (checkpoints/step<N>, the base model as step0) with this config, without training; the results go to --out (--eval_episodes 0: the closing round robin alone)"""
    # defaults of this script (the options are documented in socialgym_training.configs; the
    # game is a two-player or team game, hidden roles allowed)
    game: str = "kuhn_poker"
    out: str = "runs/selfplay"
    learning_rate: float = 1e-4
    lora_r: int = 8
    lora_alpha: int = 16
    reply_prefix: str = '{"action_type": "'
    max_turns: int = 24


def layout_options(config: Config) -> str:
    """The LLM options of the policy that plays a checkpoint as trained: scoring mode at the
    trainer's temperature (with ``adapter=`` added, the tournament spec)."""
    return (policy_options(config.max_new_tokens, True, config.policy_options)
            + f"&mode=score&temperature={config.temperature}" + ("&talk=pass" if config.talk == "pass" else ""))


def game_kwargs(config: Config) -> dict:
    """The game's keyword arguments: ``--game_config`` and ``--num_players``."""
    kwargs = json.loads(config.game_config) if config.game_config else {}
    if config.num_players:
        kwargs["num_players"] = config.num_players
    return kwargs


def learner_teams(config: Config) -> tuple:
    """The teams whose seats are trained (``--train_teams``; empty: every team)."""
    return tuple(t for t in config.train_teams.split(",") if t)
