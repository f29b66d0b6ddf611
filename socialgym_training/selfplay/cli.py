"""The self-play script: :func:`main`, the steps in order (the method: :mod:`socialgym_training.selfplay`;
the options: :class:`~socialgym_training.selfplay.config.Config`).

    python -m socialgym_training.selfplay --game kuhn_poker --steps 20 --out runs/selfplay_kuhn
"""
from __future__ import annotations

import random
import time
from pathlib import Path

import socialgym_env
from socialgym_env.atomic import atomic_dir
from socialgym_training.multiturn.layouts import make_layout
from socialgym_training.selfplay.config import Config, layout_options
from socialgym_training.selfplay.evaluation import evaluate_checkpoints, load_checkpoints
from socialgym_training.selfplay.trainer import (LoraSwap, SelfPlayState, StepLog, checked_resume, last_checkpoint,
                                                 make_callbacks, make_rollout_func, make_trainer)


def main(argv=None, preloaded=None) -> dict:
    """Run the script; ``preloaded`` = (model, tokenizer) skips loading (tests reuse one load)."""
    from socialgym_agents.runner import PolicyPool
    from socialgym_training.common import load_base, parse_config, write_json
    config = parse_config(Config, argv)
    options = check_config(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    rng = random.Random(config.seed)
    metrics = {"config": {k: getattr(config, k) for k in config.__dataclass_fields__}}

    # 1. the model, the prompts it plays on (turns: the LLM policy's own) and the frozen opponents
    model, tokenizer = preloaded or load_base(config.model, config.threads, config.device)
    layout = make_layout(config.prompt, tokenizer, model, options)
    policies = PolicyPool(seed=config.seed)
    if config.evaluate:             # an earlier run's checkpoints, rated without training
        peft_model, saved, final = load_checkpoints(model, config)
        return evaluate_checkpoints(config, peft_model, tokenizer, saved, final, layout, policies, rng, out, options,
                                    metrics, started)

    # 2. the self-play state (opponent pool, role baselines), continued from the last checkpoint with --resume
    state = SelfPlayState(config, rng)
    resume_from = last_checkpoint(out) if config.resume else None
    if resume_from:
        state.load(resume_from)
    log = StepLog(out, keep_before=state.resumed_step if resume_from else None)

    # 3. TRL's GRPO trainer whose rollouts are self-play episodes and whose advantages are RAE or turn-level
    trainer = make_trainer(config, model, tokenizer, out,
                           make_rollout_func(config, tokenizer, state, log, policies, layout))
    swap = LoraSwap(trainer.accelerator.unwrap_model(trainer.model))
    if not resume_from:             # the pool starts with the base model (a zero LoRA), step 0
        state.pool.add(0, swap.snapshot())
        state.saved = {"step0": state.pool.get("step0")}
    for callback in make_callbacks(config, state, swap, out):
        trainer.add_callback(callback)

    # 4. train: to --steps, or one --piece_steps piece that the same command with --resume continues
    trained_at = time.time()
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    train_seconds = round(time.time() - trained_at, 1)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    if trainer.state.global_step < config.steps:
        metrics.update(loss=losses, stopped_at=trainer.state.global_step, piece_seconds=train_seconds)
        write_json(out / "metrics.json", metrics)
        return metrics

    # 5. the final adapter, then every checkpoint evaluated
    with atomic_dir(out / "adapter", marker="adapter_config.json") as folder:
        swap.model.save_pretrained(str(folder))
    final = f"step{config.steps}"
    state.saved[final] = swap.snapshot()
    metrics.update(train_seconds=train_seconds, loss=losses)
    return evaluate_checkpoints(config, swap.model, tokenizer, state.saved, final, layout, policies, rng, out, options,
                                metrics, started)


def check_config(config: Config) -> str:
    """One line and exit 2 for a bad option, before anything loads; the policy layout's options."""
    from socialgym_agents.registry import PolicySpecError
    from socialgym_agents.runner import PolicyPool
    from socialgym_training.common import fail
    if config.reward not in ("auto", "score", "outcome") or config.prompt not in ("turns", "compact", "full"):
        fail("--reward must be auto, score or outcome and --prompt turns, compact or full")
    if config.advantage not in ("rae", "turn") or config.turn_norm not in ("role", "agent"):
        fail("--advantage must be rae or turn and --turn_norm role or agent")
    if config.talk not in ("free", "pass"):
        fail("--talk must be free or pass")
    if config.cache_mb < 0 or config.live_episodes < 0:
        fail("--cache_mb and --live_episodes must be >= 0 (0: no seat caches, every episode at once)")
    if config.policy_options and config.prompt != "turns":
        fail("--policy_options sets the policy's layout: it needs --prompt turns")
    try:
        options = layout_options(config)
        info = socialgym_env.game_class(config.game).info
    except (KeyError, ValueError) as err:
        fail(str(err).strip("'\""))
    if config.group_size < 1 or not 0.0 <= config.fixed_share <= 1.0:
        fail("--group_size must be at least 1 and --fixed_share a probability")
    if config.train_teams and not info.team_game:
        fail(f"--train_teams needs a team game; {config.game} has no teams")
    if config.resume:
        try:
            checked_resume(Path(config.out))
        except ValueError as err:
            fail(str(err))
    try:                   # the evaluation plays the heuristic: a game without one fails now, not after training
        PolicyPool().check("scripted:heuristic", games=[config.game])
    except PolicySpecError as err:
        fail(str(err))
    try:
        for spec in [spec for spec in config.fixed_opponents.split(",") if spec]:
            PolicyPool().check(spec, games=[config.game])
    except PolicySpecError as err:
        fail(str(err))
    return options
