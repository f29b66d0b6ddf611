"""What the GRPO scripts share: the trainable model, command-line parsing of a config
dataclass, binomial intervals, and the reward-curve files (CSV + PNG)."""
from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Sequence


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


def model_path(name: str) -> str:
    """A local folder for ``smollm2`` (the project's dequantized cache, built on first use) or
    any local transformers folder."""
    if name != "smollm2":
        if not Path(name).expanduser().is_dir():
            raise SystemExit(f"error: model {name!r} is not a local folder (or 'smollm2')")
        return str(Path(name).expanduser())
    from agents.llm.hf_backend import SMOLLM2_CACHE_NAME, cache_root, load_model
    path = cache_root() / "models" / SMOLLM2_CACHE_NAME
    if not (path / "config.json").is_file():
        load_model("smollm2")            # dequantizes the GGUF once and writes the cache
    return str(path)


def load_trainable(name: str, threads: int = 2):
    """A fresh (model, tokenizer) to train: never the shared inference copy of
    ``agents.llm.hf_backend.load_model``, since PEFT injects adapters into the model in place."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if threads:
        torch.set_num_threads(threads)
    path = model_path(name)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    return model, tokenizer


def lora_config(r: int, alpha: int):
    from peft import LoraConfig
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])


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
    return asdict(config)


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
