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

from socialgym_training.configs import DataArgs, LoraArgs, ModelArgs, RunArgs, TrainerArgs


@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, TrainerArgs, DataArgs):
    # defaults of this script (the options are documented in socialgym_training.configs)
    data: str = "runs/hrd/sft"
    out: str = "runs/sft"
    lora_dropout: float = 0.05
    lora_targets: str = "all-linear"


def main(argv=None) -> dict:
    from socialgym_training.common import fit_dataset, load_base, load_rows, parse_config, train_and_save, trainer_args
    config = parse_config(Config, argv)
    from trl import SFTConfig, SFTTrainer

    # 1. data: conversational prompt/completion rows
    dataset = load_rows(config.data, ("prompt", "completion"), config.max_examples, seed=config.seed)
    # 2. model: a fresh copy of the base, LoRA added by the trainer
    model, tokenizer = load_base(config.model, config.threads, config.device)
    # every row within the max_length it needs, its completion whole (TRL would cut the completion)
    dataset, max_length, fit = fit_dataset(dataset, tokenizer, ("prompt", "completion"), config)
    args = SFTConfig(**trainer_args(config, max_length), completion_only_loss=True, packing=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=config.peft_config())
    # 3. train (resuming a killed run), then save adapter + config + metrics
    return train_and_save(trainer, config, {"examples": len(dataset), "fit": fit})

if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.sft")
