"""The TRL / PEFT glue: the GRPO trainer with the rollout's advantages, its ``rollout_func``
(self-play episodes as rows), checkpoints as copies of the LoRA weights, the per-step log and
the state a resumed run needs beside TRL's own."""
from __future__ import annotations

import csv
import json
import random
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from socialgym_agents.selfplay import CURRENT, CheckpointPool, RoleBaseline
from socialgym_env.atomic import append_csv_rows, atomic_dir, atomic_file, atomic_write_text
from socialgym_training.multiturn.episode import rollout_output
from socialgym_training.selfplay.config import Config
from socialgym_training.selfplay.credit import apply_advantages, row_advantages
from socialgym_training.selfplay.decisions import make_decider
from socialgym_training.selfplay.rollout import collect_rows, plan_episodes, play


def make_trainer(config: Config, model, tokenizer, out: Path, rollout_func):
    """TRL's GRPO trainer (:func:`make_trainer_class`) over ``config.steps`` one-row prompts, a
    LoRA on ``model``, its rollouts from ``rollout_func`` (:func:`make_rollout_func`); TRL's own
    checkpoints every ``save_every`` steps in ``<out>/trainer``."""
    from datasets import Dataset

    from socialgym_training.common import grpo_args
    precision = dict(bf16=True) if config.bf16 else {}
    args = grpo_args(out, config.device, config.progress, max_steps=config.steps, **precision,
                     learning_rate=config.learning_rate, seed=config.seed,
                     per_device_train_batch_size=config.rows_per_step, num_generations=config.rows_per_step,
                     temperature=config.temperature, max_completion_length=config.max_new_tokens,
                     scale_rewards="none", beta=0.0,
                     **(dict(save_strategy="steps", save_steps=config.save_every, save_total_limit=2)
                        if config.save_every else {}))
    dataset = Dataset.from_list([{"prompt": json.dumps({"game": config.game, "step": i})} for i in range(config.steps)])
    return make_trainer_class()(model=model, reward_funcs=[row_reward], args=args, train_dataset=dataset,
                                processing_class=tokenizer, peft_config=config.peft_config(), rollout_func=rollout_func)


def make_trainer_class():
    from trl import GRPOTrainer

    class SelfPlayGRPOTrainer(GRPOTrainer):
        """GRPO with the rollout's advantages (RAE or turn-level) instead of group-normalised
        rewards, and the tokens with zero advantage taken out of the loss and of its token count."""

        selfplay_advantages: list = []

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            return apply_advantages(output, self.selfplay_advantages, self.accelerator.gather)

    return SelfPlayGRPOTrainer


def row_reward(completions, row_reward, **kwargs) -> list:
    """The rollout's per-row reward (TRL logs it; the advantages come from RAE)."""
    return [float(r) for r in row_reward]


def make_rollout_func(config: Config, tokenizer, state: "SelfPlayState", log: "StepLog", policies, layout=None):
    """TRL's ``rollout_func``: a step's rows from self-play episodes (as many groups as it takes
    to fill them), their advantages handed to the trainer, the step logged."""

    def rollout(prompts, trainer):
        step = trainer.state.global_step
        model = trainer.accelerator.unwrap_model(trainer.model)
        swap = LoraSwap(model)
        rows: list = []
        plan_all = []
        while len(rows) < len(prompts):
            plan = plan_episodes(config, step * 100 + len(plan_all), state.pool, state.rng)
            plan_all += plan
            games = play(plan, {"model": make_decider(model, tokenizer, config, state.rng, layout), "pool": policies},
                         tokenizer, config, swap=swap, pool=state.pool, layout=layout)
            rows += collect_rows(games, config, len(prompts) - len(rows))
        before = dict(state.baseline.values)
        advantages, kept = row_advantages(rows, config, state.baseline)
        trainer.selfplay_advantages = advantages
        log.add(step, rows, kept, before, plan_all, tokenizer)
        output = rollout_output(rows)
        output["row_reward"] = [r.reward for r in rows]
        return output

    return rollout


class StepLog:
    """``rollouts.csv``: per step and role key, rows, mean reward, baseline before, rows kept."""

    def __init__(self, out: Path, keep_before: Optional[int] = None):
        """``keep_before``: a resumed run keeps the lines of the steps before it (a stopped piece
        may have logged a step past its checkpoint); else the file starts anew."""
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "rollouts.csv"
        self.mask_path = out / "mask_example.json"
        header = ["step", "role", "rows", "mean_reward", "baseline_before", "kept", "opponents"]
        kept = []
        if keep_before is not None and self.path.is_file():
            with open(self.path, newline="") as handle:
                kept = [line for line in list(csv.reader(handle))[1:] if line and int(line[0]) < keep_before]
        with atomic_file(self.path, "w", newline="") as handle:
            csv.writer(handle).writerows([header] + kept)

    def add(self, step, rows, kept, baseline_before, plan, tokenizer) -> None:
        by_role: dict = {}
        for i, row in enumerate(rows):
            by_role.setdefault(row.role_key, []).append(i)
        opponents = sorted({p for _, seats in plan for p in seats.values() if p != CURRENT}) or [CURRENT]
        # one write per step: a killed run leaves whole steps (a torn last line at worst)
        append_csv_rows(self.path, [[step, key[1], len(idx), round(sum(rows[i].reward for i in idx) / len(idx), 4),
                                     round(baseline_before.get(key, 0.0), 4), sum(i in kept for i in idx),
                                     "+".join(opponents)] for key, idx in sorted(by_role.items())])
        if step == 0 and rows:
            from socialgym_training.grpo_games import mask_spans
            atomic_write_text(self.mask_path, json.dumps(mask_spans(rows[0], tokenizer), indent=1) + "\n")


class LoraSwap:
    """Copies of a PEFT model's LoRA weights, and a context that plays with one of them loaded."""

    def __init__(self, model):
        self.model = model

    def snapshot(self) -> dict:
        from peft import get_peft_model_state_dict
        return {k: v.detach().clone() for k, v in get_peft_model_state_dict(self.model).items()}

    @contextmanager
    def loaded(self, weights: Optional[dict]):
        from peft import set_peft_model_state_dict
        if weights is None:
            yield
            return
        current = self.snapshot()
        set_peft_model_state_dict(self.model, weights)
        try:
            yield
        finally:
            set_peft_model_state_dict(self.model, current)


# ------------------------------------------------------------------ resumable state and checkpoints
RESUME_STATE = "selfplay_state.pt"


class SelfPlayState:
    """What self-play keeps beside TRL's own checkpoint (adapter, optimizer, scheduler,
    torch/numpy/random RNGs): this script's RNG, the per-role baselines, the opponent pool and
    the checkpoints' weights saved for the closing tournament (``saved``: {``step<N>``: weights})."""

    def __init__(self, config: Config, rng: random.Random):
        self.rng = rng
        self.baseline = RoleBaseline(config.baseline_rate)
        fixed = [spec for spec in config.fixed_opponents.split(",") if spec]
        self.pool = CheckpointPool(config.pool_size, config.self_play, fixed, config.fixed_share)
        self.saved: dict = {}
        self.resumed_step = 0         # the step of the checkpoint this run continues from

    def save(self, folder: Path, step: int) -> None:
        import torch
        torch.save({"step": step, "rng": self.rng.getstate(), "baseline": dict(self.baseline.values),
                    "pool": list(self.pool.entries), "saved": dict(self.saved)}, folder / RESUME_STATE)

    def load(self, folder: Path) -> None:
        import torch
        resumed = torch.load(folder / RESUME_STATE, weights_only=False)   # our own file: tuples, a Random state
        self.rng.setstate(resumed["rng"])
        self.baseline.values = dict(resumed["baseline"])
        self.pool.entries = list(resumed["pool"])
        self.saved = dict(resumed["saved"])
        self.resumed_step = resumed["step"]


def last_checkpoint(out: Path) -> Optional[Path]:
    """The newest ``<out>/trainer/checkpoint-<N>`` holding the self-play state (None if none)."""
    folders = [f for f in (out / "trainer").glob("checkpoint-*") if (f / RESUME_STATE).is_file()]
    return max(folders, key=lambda f: int(f.name.split("-")[1]), default=None)


def checked_resume(out: Path) -> Optional[Path]:
    """The checkpoint ``--resume`` continues from (None: there is none, a fresh start), checked
    before the model loads: TRL's ``trainer_state.json`` must be a JSON object with its step.
    ValueError (one line) naming the unusable checkpoint: continuing past a corrupt one would
    start training without saying so."""
    folder = last_checkpoint(out)
    if folder is None:
        return None
    state_file = folder / "trainer_state.json"
    try:
        step = json.loads(state_file.read_text(encoding="utf-8"))["global_step"]
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"global_step is {step!r}")
    except (OSError, ValueError, KeyError, TypeError) as err:
        reason = f"no {state_file.name}" if isinstance(err, FileNotFoundError) else f"{state_file.name}: {err}"
        raise ValueError(f"--resume: checkpoint {folder} is unusable ({' '.join(reason.split())[:200]}); delete "
                         f"that folder to resume from an earlier checkpoint, or give another --out") from None
    return folder


def make_callbacks(config: Config, selfplay: SelfPlayState, swap: LoraSwap, out: Path) -> list:
    """The trainer's callbacks: a checkpoint into the pool and to disk every ``snapshot_every``
    steps; the end of a ``--piece_steps`` piece; the self-play state in every TRL checkpoint."""
    from transformers import TrainerCallback

    class Snapshots(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % config.snapshot_every == 0:
                weights = swap.snapshot()
                selfplay.pool.add(state.global_step, weights)
                selfplay.saved[f"step{state.global_step}"] = weights
                with atomic_dir(out / "checkpoints" / f"step{state.global_step}", marker="adapter_config.json") as folder:
                    swap.model.save_pretrained(str(folder))
            return control

    class Pieces(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if config.piece_steps and state.global_step >= selfplay.resumed_step + config.piece_steps:
                control.should_save = control.should_training_stop = True
            return control

        def on_save(self, args, state, control, **kwargs):
            selfplay.save(Path(args.output_dir) / f"checkpoint-{state.global_step}", state.global_step)
            return control

    return [Snapshots(), Pieces()]
