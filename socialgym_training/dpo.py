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

from socialgym_training.configs import DataArgs, LoraArgs, ModelArgs, RunArgs, TrainerArgs


@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, TrainerArgs, DataArgs):
    beta: float = 0.1
    """DPO temperature (strength of the pull towards the reference)"""
    # defaults of this script (the options are documented in socialgym_training.configs)
    data: str = "runs/hrd/dpo"
    out: str = "runs/dpo"
    max_examples: int = 1100
    lora_dropout: float = 0.05
    lora_targets: str = "all-linear"


def main(argv=None) -> dict:
    from socialgym_training.common import fit_dataset, load_base, load_rows, parse_config, train_and_save, trainer_args
    config = parse_config(Config, argv)
    from trl import DPOConfig, DPOTrainer

    # 1. data: conversational preference pairs
    dataset = load_rows(config.data, ("prompt", "chosen", "rejected"), config.max_examples, seed=config.seed)
    # 2. model: a fresh copy of the base; with a peft_config the reference is the base without the adapter
    model, tokenizer = load_base(config.model, config.threads, config.device)
    # every row within the max_length it needs, its completion whole (TRL would cut the completion)
    dataset, max_length, fit = fit_dataset(dataset, tokenizer, ("prompt", "chosen", "rejected"), config)
    args = DPOConfig(**trainer_args(config, max_length), beta=config.beta)
    trainer = DPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=config.peft_config())
    # 3. train (resuming a killed run), then save adapter + config + metrics
    return train_and_save(trainer, config, {"pairs": len(dataset), "fit": fit})

if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.dpo")
