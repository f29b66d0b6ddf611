"""Direct preference optimisation with a LoRA adapter (TRL ``DPOTrainer`` + PEFT), CleanRL style.

    python -m socialgym_training.dpo --data exports/pd_dpo --out runs/dpo_pd                  # `socialgym export dpo` / branching pairs
    python -m socialgym_training.dpo --data runs/hrd/dpo --out runs/hrd_dpo --max_examples 200 --epochs 1 --learning_rate 2e-4

Reads a dataset folder or JSONL with ``prompt`` / ``chosen`` / ``rejected`` in chat format.
The reference model is the base itself (the adapter switched off), so no second copy is held.
Writes ``OUT/adapter``, ``OUT/config.json``, ``OUT/metrics.json`` and resumable
``OUT/checkpoints``. Defaults are the SocialMaze paper's fine-tuning parameters (2 epochs, lr
5e-6, cosine, warmup 0.1, batch 1 x grad-accum 8, 1100 pairs); shrink them by flags on a CPU.
On GPUs: ``--device auto`` takes one; ``accelerate launch --config_file socialgym_training/accelerate/multi_gpu.yaml
-m socialgym_training.dpo ...`` for several (docs/training/gpu.md).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
    data: str = "runs/hrd/dpo"
    """Dataset folder or JSONL with prompt/chosen/rejected"""
    out: str = "runs/dpo"
    """Output folder: adapter/, config.json, metrics.json, checkpoints/"""
    model: str = "smollm2"
    """smollm2, hf:<folder or .gguf>, or a folder"""
    max_examples: int = 1100
    """Pairs used (0 = all)"""
    epochs: float = 2.0
    """Passes over the training rows"""
    max_steps: int = -1
    """Optimiser steps; > 0 overrides epochs"""
    learning_rate: float = 5e-6
    """AdamW learning rate (LoRA needs more than a full fine-tune)"""
    lr_scheduler: str = "cosine"
    """Transformers scheduler name: cosine, linear, constant..."""
    warmup_ratio: float = 0.1
    """Share of the steps spent warming up the learning rate"""
    batch_size: int = 1
    """Examples per device and step"""
    grad_accum: int = 8
    """Steps whose gradients are summed before one optimiser update"""
    max_length: int = 1024
    """Tokens per example (longer ones are truncated)"""
    beta: float = 0.1
    """DPO temperature (strength of the pull towards the reference)"""
    lora_r: int = 16
    """LoRA rank"""
    lora_alpha: int = 32
    """LoRA scaling (alpha / r multiplies the update)"""
    lora_dropout: float = 0.05
    """Dropout on the LoRA input"""
    lora_targets: str = "all-linear"
    """LoRA target modules: all-linear, or e.g. q_proj,v_proj"""
    gradient_checkpointing: bool = False
    """Saves memory on big models, costs ~30% more compute"""
    seed: int = 0
    """Seed of the data sample, the adapter's initialisation and the sampling"""
    threads: int = 2
    """Torch CPU threads (0 = torch's default)"""
    logging_steps: int = 5
    """Log loss and learning rate every this many steps"""
    save_steps: int = 50
    """Write a checkpoint every this many steps"""
    resume: bool = True
    """Continue from the last checkpoint in out/checkpoints"""
    progress: bool = True
    """Show a progress bar (steps, ETA) and the logged loss; --progress false for quiet logs"""
    device: str = "auto"
    """auto (a GPU when one is visible), cpu or cuda; under accelerate launch each process takes its own GPU"""


def main(argv=None) -> dict:
    from socialgym_training.common import load_base, load_rows, lora_config, parse_config, train_and_save, trainer_args
    config = parse_config(Config, argv)
    from trl import DPOConfig, DPOTrainer

    # 1. data: conversational preference pairs
    dataset = load_rows(config.data, ("prompt", "chosen", "rejected"), config.max_examples, seed=config.seed)
    # 2. model: a fresh copy of the base; with a peft_config the reference is the base without the adapter
    model, tokenizer = load_base(config.model, config.threads, config.device)
    args = DPOConfig(**trainer_args(config), beta=config.beta)
    trainer = DPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=lora_config(config.lora_r, config.lora_alpha, config.lora_dropout,
                                                 config.lora_targets))
    # 3. train (resuming a killed run), then save adapter + config + metrics
    return train_and_save(trainer, config, {"pairs": len(dataset)})

if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.dpo")
