"""What the training scripts share: command-line parsing of a config dataclass, the base model
and its LoRA config, the data, checkpoint resume, binomial intervals and the run's files (adapter,
config, metrics, reward curves). Kept small so each script still reads top to bottom."""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence


def parse_config(config_class, argv: Sequence[str] | None = None):
    """A config dataclass from ``--field value`` arguments (transformers' HfArgumentParser);
    unknown or bad arguments print one line naming the valid ones and exit with code 2."""
    from transformers import HfArgumentParser
    parser = HfArgumentParser(config_class)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        (config,) = parser.parse_args_into_dataclasses(args=args, return_remaining_strings=False)
    except (ValueError, SystemExit) as err:
        if isinstance(err, SystemExit) and err.code == 0:          # --help
            raise
        valid = ", ".join("--" + name for name in config_class.__dataclass_fields__)
        print(f"error: bad arguments {' '.join(args)!r}; valid options: {valid}", file=sys.stderr)
        raise SystemExit(2) from None
    return config


def model_path(model: str) -> str:
    """A folder ``from_pretrained`` can load for a policy-style model name: ``smollm2`` (the
    embedded model's dense cache, made on first use), ``hf:<folder or .gguf>`` or a folder."""
    from agents.llm import loading
    name = model[3:] if model.startswith("hf:") else model
    if name == "smollm2" or name.endswith(".gguf"):
        loading.load_model(name)          # dequantizes and caches the dense copy the first time
        if name == "smollm2":
            cached = loading.cache_root() / "models" / loading.SMOLLM2_CACHE_NAME
        else:
            import hashlib
            gguf = Path(name).expanduser()
            digest = hashlib.sha1(str(gguf.resolve()).encode()).hexdigest()[:10]
            cached = loading.cache_root() / "models" / f"{gguf.stem}-{digest}-dequantized"
        if not (cached / "config.json").is_file():
            raise FileNotFoundError(f"no dense cache of {model} at {cached} (is $SOCIALGYM_CACHE writable?)")
        return str(cached)
    if not Path(name).expanduser().is_dir():
        raise SystemExit(f"error: model {model!r} is not 'smollm2', a .gguf file or a local model folder")
    return str(Path(name).expanduser())


def load_base(model: str, threads: int = 0):
    """(model, tokenizer), fresh from disk (never the backend's shared copy: LoRA edits it in place)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if threads:
        torch.set_num_threads(threads)
    path = model_path(model)
    dtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32
    base = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return base, tokenizer


# LoRA on the attention projections unless a script asks for more ("all-linear").
ATTENTION = "q_proj,k_proj,v_proj,o_proj"


def lora_config(r: int, alpha: int, dropout: float = 0.0, target_modules: str = ATTENTION):
    from peft import LoraConfig
    targets = "all-linear" if target_modules == "all-linear" else [t.strip() for t in target_modules.split(",")]
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets, task_type="CAUSAL_LM")


def load_rows(data: str, columns: tuple, max_examples: int = 0, split: str = "train", seed: int = 0):
    """A split of a dataset folder (``socialgym export`` / ``training.socialmaze``) or a JSONL file,
    reduced to ``columns`` (TRL infers the format from them) and to ``max_examples`` rows."""
    from datasets import load_dataset, load_from_disk
    path = Path(data)
    if path.is_dir():
        dataset = load_from_disk(str(path))
        dataset = dataset[split] if hasattr(dataset, "keys") else dataset
    elif path.is_file():
        dataset = load_dataset("json", data_files=str(path), split="train")
    else:
        raise FileNotFoundError(f"no dataset folder or JSONL file at {data}")
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise ValueError(f"{data} lacks the columns {missing} (has {dataset.column_names})")
    dataset = dataset.select_columns(list(columns))
    if max_examples and len(dataset) > max_examples:
        dataset = dataset.shuffle(seed=seed).select(range(max_examples))
    return dataset


def last_checkpoint(output_dir: str) -> Optional[str]:
    from transformers.trainer_utils import get_last_checkpoint
    return get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None


def trainer_args(config) -> dict:
    """The TrainingArguments both scripts take from their config (CPU or GPU, bf16 where it exists)."""
    import torch
    on_gpu = torch.cuda.is_available()
    return dict(
        output_dir=str(Path(config.out) / "checkpoints"), num_train_epochs=config.epochs, max_steps=config.max_steps,
        learning_rate=config.learning_rate, lr_scheduler_type=config.lr_scheduler,
        warmup_steps=config.warmup_ratio,          # a float < 1 is a ratio (transformers 5)
        per_device_train_batch_size=config.batch_size, gradient_accumulation_steps=config.grad_accum,
        logging_steps=config.logging_steps, save_steps=config.save_steps, save_total_limit=2, seed=config.seed,
        bf16=on_gpu and torch.cuda.is_bf16_supported(), use_cpu=not on_gpu, report_to=[], max_length=config.max_length,
        gradient_checkpointing=config.gradient_checkpointing, dataloader_num_workers=0,
        disable_tqdm=not config.progress)


def train_and_save(trainer, config, extra: dict) -> dict:
    """Train (from the last checkpoint of a killed run when ``config.resume``), then write the
    outputs; ``extra`` goes into the metrics with ``resumed_from`` and ``wall_seconds``."""
    import time
    resume = last_checkpoint(trainer.args.output_dir) if config.resume else None
    started = time.time()
    trainer.train(resume_from_checkpoint=resume)
    return write_outputs(trainer, config, config.out, {**extra, "resumed_from": resume,
                                                       "wall_seconds": round(time.time() - started, 1)})


def write_outputs(trainer, config, out: str, extra: Optional[dict] = None) -> dict:
    """``out/adapter`` (the LoRA weights the backend loads), ``out/config.json``, ``out/metrics.json``."""
    out_dir = Path(out)
    adapter = out_dir / "adapter"
    trainer.model.save_pretrained(str(adapter))
    trainer.processing_class.save_pretrained(str(adapter))
    (out_dir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True) + "\n")
    history = trainer.state.log_history
    metrics = {"global_step": trainer.state.global_step, "log_history": history,
               "train": next((h for h in reversed(history) if "train_runtime" in h), {}), **(extra or {})}
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


def rate_with_interval(successes: int, n: int) -> dict:
    """Proportion with its 95% Wilson interval (scipy)."""
    from scipy.stats import binomtest
    if n == 0:
        return {"rate": float("nan"), "low": float("nan"), "high": float("nan"), "k": 0, "n": 0}
    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return {"rate": successes / n, "low": float(ci.low), "high": float(ci.high), "k": int(successes), "n": int(n)}


def save_curves(log_history: list, out: Path, columns: Sequence[str], title: str) -> None:
    """The trainer's per-step log as ``reward_curve.csv`` and ``reward_curve.png``."""
    rows = [row for row in log_history if "step" in row and any(c in row for c in columns)]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "reward_curve.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", *columns])
        for row in rows:
            writer.writerow([row["step"], *[row.get(c, "") for c in columns]])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for column in columns:
        points = [(row["step"], row[column]) for row in rows if column in row]
        if points:
            ax.plot(*zip(*points), marker="o", markersize=3, label=column)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("mean over the step's completions")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "reward_curve.png", dpi=120)
    plt.close(fig)


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def config_dict(config) -> dict:
    return dataclasses.asdict(config)


def cpu_grpo_args(out: Path, **overrides):
    """GRPOConfig defaults for a small CPU run: no bf16, log every step, no checkpoints."""
    from trl import GRPOConfig
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    base = dict(output_dir=str(out / "trainer"), use_cpu=True, bf16=False, logging_steps=1,
                save_strategy="no", report_to=[], disable_tqdm=True, dataloader_num_workers=0)
    base.update(overrides)
    return GRPOConfig(**base)


def finish_run(out: Path, config, before, after=None, trainer=None, started: float = 0.0,
               train_seconds: float = 0.0, curve_columns: Sequence[str] = (), title: str = "") -> dict:
    """Save the reward curves (when a trainer ran) and ``metrics.json``; return the metrics."""
    import time
    metrics = {"config": config_dict(config), "before": before}
    if trainer is not None:
        save_curves(trainer.state.log_history, out, curve_columns, title)
        metrics.update(after=after, train_seconds=round(train_seconds, 1))
    metrics["total_seconds"] = round(time.time() - started, 1) if started else None
    write_json(out / "metrics.json", metrics)
    return metrics
