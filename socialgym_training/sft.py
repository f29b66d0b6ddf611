"""Supervised fine-tuning with a LoRA adapter (TRL ``SFTTrainer`` + PEFT), CleanRL style.

    python -m socialgym_training.sft --data exports/pd_sft --out runs/sft_pd                  # from `socialgym export sft`
    python -m socialgym_training.sft --data runs/hrd/sft --out runs/hrd_sft --max_examples 200 --epochs 1 --learning_rate 2e-4

Reads a dataset folder (``save_to_disk`` with a ``train`` split, as ``socialgym export sft`` and
``python -m socialgym_training.socialmaze data`` write) or a JSONL file, with ``prompt`` / ``completion`` in
chat format (TRL's conversational prompt-completion form: the loss is on the completion only).
Writes ``OUT/adapter`` (load it with ``smollm2?adapter=OUT/adapter``), ``OUT/config.json``,
``OUT/metrics.json`` and ``OUT/checkpoints`` (a rerun of the same command resumes from the last
one). Defaults are the SocialMaze paper's fine-tuning parameters (2 epochs, lr 5e-6, cosine,
warmup 0.1, batch 1 x grad-accum 8, 2000 examples); shrink them by flags on a CPU. On GPUs the
same script runs under ``accelerate launch --config_file socialgym_training/accelerate/<config>.yaml -m socialgym_training.sft ...``
(bf16 where supported; one GPU, DDP or DeepSpeed ZeRO-2: docs/training/gpu.md).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
    data: str = "runs/hrd/sft"
    """Dataset folder or JSONL with prompt/completion"""
    out: str = "runs/sft"
    """Output folder: adapter/, config.json, metrics.json, checkpoints/"""
    model: str = "smollm2"
    """smollm2, hf:<folder or .gguf>, or a folder"""
    max_examples: int = 2000
    """Rows used (0 = all)"""
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
    from trl import SFTConfig, SFTTrainer

    # 1. data: conversational prompt/completion rows
    dataset = load_rows(config.data, ("prompt", "completion"), config.max_examples, seed=config.seed)
    # 2. model: a fresh copy of the base, LoRA added by the trainer
    model, tokenizer = load_base(config.model, config.threads, config.device)
    args = SFTConfig(**trainer_args(config), completion_only_loss=True, packing=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=lora_config(config.lora_r, config.lora_alpha, config.lora_dropout,
                                                 config.lora_targets))
    # 3. train (resuming a killed run), then save adapter + config + metrics
    return train_and_save(trainer, config, {"examples": len(dataset)})

if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.sft")
