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

from socialgym_env.docgen import field_help
from socialgym_env.atomic import atomic_dir, atomic_file, atomic_savefig, atomic_write_json, atomic_write_text


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2 (never a library's traceback)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def config_parser(config_class):
    """transformers' HfArgumentParser for ``config_class`` with every option's help line taken
    from its field's docstring (and its default)."""
    from transformers import HfArgumentParser
    script = Path(sys.argv[0])
    # a package run as a script (python -m socialgym_training.selfplay) is named, not its __main__.py
    prog = script.parent.name if script.name == "__main__.py" else None
    parser = HfArgumentParser(config_class, prog=prog, description=(sys.modules[config_class.__module__].__doc__ or "")
                              .strip().split("\n")[0])
    docs = field_help(config_class)
    for action in parser._actions:
        if action.dest in docs:
            action.help = docs[action.dest].replace("%", "%%")      # the formatter adds the default

    def error(message):          # argparse would print its usage block first: parse_config says one line
        raise ValueError(message)
    parser.error = error
    return parser


def parse_config(config_class, argv: Sequence[str] | None = None):
    """A config dataclass from ``--field value`` arguments (transformers' HfArgumentParser, every
    option's ``--help`` line from its field docstring); unknown or bad arguments print one line
    naming the valid ones and exit with code 2."""
    parser = config_parser(config_class)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        (config,) = parser.parse_args_into_dataclasses(args=args, return_remaining_strings=False)
    except (ValueError, SystemExit) as err:
        if isinstance(err, SystemExit) and err.code == 0:          # --help
            raise
        valid = ", ".join("--" + name for name in config_class.__dataclass_fields__)
        reason = f" ({err})" if isinstance(err, ValueError) and str(err) else ""
        fail(f"bad arguments {' '.join(args)!r}{reason}; valid options: {valid}")
    check_numbers(config)
    if hasattr(config, "device"):
        resolve_device(config.device)          # --device cuda on a machine without one: say so now
    if isinstance(getattr(config, "out", None), str):    # every script's --out is a folder
        from socialgym_env.cli_errors import check_output_folder
        try:
            check_output_folder(config.out, "--out")
        except ValueError as err:
            fail(str(err))
    return config


# Bounds of the options several scripts share, by field name (a script without the field skips
# it): what each means leaves no other sensible value, and a bad one would otherwise surface only
# after the model loads (a NaN temperature) or never (a negative --save_every saves nothing).
_POSITIVE, _COUNT, _SOME = (lambda v: v > 0, "> 0"), (lambda v: v >= 0, ">= 0"), (lambda v: v >= 1, ">= 1")
_PROBABILITY = (lambda v: 0.0 <= v <= 1.0, "a probability, from 0 to 1")
OPTION_BOUNDS = {
    "temperature": _POSITIVE, "learning_rate": _POSITIVE, "epochs": _POSITIVE, "beta": _POSITIVE,
    "lora_dropout": (lambda v: 0.0 <= v < 1.0, "from 0 up to (not including) 1"),
    "warmup_ratio": _PROBABILITY, "self_play": _PROBABILITY, "fixed_share": _PROBABILITY,
    "turn_discount": _PROBABILITY, "baseline_rate": (lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    "threads": _COUNT, "save_every": _COUNT, "piece_steps": _COUNT, "tournament_episodes": _COUNT,
    "eval_episodes": _COUNT, "live_episodes": _COUNT, "cache_mb": _COUNT, "steps": _COUNT,
    "snapshot_every": _SOME, "pool_size": _SOME, "rows_per_step": _SOME, "max_new_tokens": _SOME,
    "max_turns": _SOME, "lora_r": _SOME, "batch_size": _SOME, "grad_accum": _SOME, "save_steps": _SOME,
    "logging_steps": _SOME,
}


def check_numbers(config) -> None:
    """One line and exit 2, before anything loads: a NaN or infinite float option (``float('nan')``
    parses), or a shared option outside :data:`OPTION_BOUNDS`."""
    import math
    for name in config.__dataclass_fields__:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            fail(f"--{name} must be a finite number, got {value}")
        check, wanted = OPTION_BOUNDS.get(name, (None, ""))
        if check is not None and not check(value):
            fail(f"--{name} must be {wanted}, got {value}")


DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA device is visible, else ``cpu``; ``cuda`` without one,
    or an unknown name, is bad input."""
    if device not in DEVICES:
        fail(f"unknown device {device!r}; valid: {', '.join(DEVICES)}")
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda, but no CUDA device is visible (torch.cuda.is_available() is False)")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def process_device(device: str) -> str:
    """Where this process puts the model: ``cpu``, or under a multi-process launcher
    (``accelerate launch``, ``torchrun``: ``LOCAL_RANK`` set) this process's own GPU,
    ``cuda:<LOCAL_RANK>``, made current first, so N processes do not all load onto GPU 0 before
    the trainer moves them."""
    import torch
    where = resolve_device(device)
    if where == "cuda" and "LOCAL_RANK" in os.environ:
        index = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(index)
        return f"cuda:{index}"
    return where


def precision_args(device: str) -> dict:
    """TrainingArguments for the device: ``use_cpu`` only on the CPU (TRL/transformers would
    otherwise stay off the GPU even under ``accelerate launch``), bf16 where the GPU has it."""
    import torch
    on_gpu = resolve_device(device) == "cuda"
    return {"use_cpu": not on_gpu, "bf16": on_gpu and torch.cuda.is_bf16_supported()}


def model_path(model: str) -> str:
    """A folder ``from_pretrained`` can load for a policy-style model name: ``smollm2`` (the
    embedded model's dense cache, made on first use), ``hf:<folder or .gguf>`` or a folder."""
    from socialgym_agents.llm import loading
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
    folder = Path(name).expanduser()
    if not folder.is_dir():
        fail(f"model {model!r} is not 'smollm2', a .gguf file or a local model folder")
    if not (folder / "config.json").is_file():
        fail(f"model folder {folder} holds no config.json (not a transformers model)")
    return str(folder)


def load_base(model: str, threads: int = 0, device: str = "auto"):
    """(model, tokenizer), fresh from disk (never the backend's shared copy: LoRA edits it in
    place), on ``device`` (bfloat16 on a GPU that supports it)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if threads:
        torch.set_num_threads(threads)
    path = model_path(model)
    where = process_device(device)
    dtype = torch.bfloat16 if where.startswith("cuda") and torch.cuda.is_bf16_supported() else torch.float32
    base = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype).to(where)
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


def _quietly(load):
    """``load()`` without datasets' progress bars (a "Generating train split" bar on stderr
    around a one-line error, or before the trainer's own bar)."""
    import datasets
    was_off = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        return load()
    finally:
        if not was_off:
            datasets.enable_progress_bars()


# Columns that name a row (episode and turn) in the log lines about it, kept beside the trained ones.
ROW_NAME_COLUMNS = ("episode_id", "turn_index")


def load_rows(data: str, columns: tuple, max_examples: int = 0, split: str = "train", seed: int = 0):
    """A split of a dataset folder (``socialgym export`` / ``socialgym_training.socialmaze``) or a JSONL file,
    reduced to ``columns`` (TRL infers the format from them; plus :data:`ROW_NAME_COLUMNS` where the
    data has them, which :func:`fit_dataset` drops) and to ``max_examples`` rows. A
    missing path, a folder that is no saved dataset, a missing or empty split, missing columns
    or a file that is not JSONL are bad input (:func:`fail`)."""
    path = Path(data)
    if path.is_dir():
        dataset = _load_saved_split(path, data, split)
    elif path.is_file():
        dataset = _load_jsonl(path, data)
    else:
        fail(f"no dataset folder or JSONL file at {data}")
    _check_columns(dataset, data, split, columns)
    dataset = dataset.select_columns(list(columns) + [c for c in ROW_NAME_COLUMNS if c in dataset.column_names])
    if max_examples and len(dataset) > max_examples:
        dataset = dataset.shuffle(seed=seed).select(range(max_examples))
    return dataset


def _load_saved_split(path: Path, data: str, split: str):
    """The ``split`` of a dataset folder saved by ``save_to_disk`` (a DatasetDict or one Dataset)."""
    from datasets import load_from_disk
    splits_file = path / "dataset_dict.json"
    if splits_file.is_file():          # a DatasetDict: load only the split asked for
        splits = json.loads(splits_file.read_text()).get("splits", [])
        if split not in splits:
            fail(f"{data} has no {split!r} split (it has {', '.join(splits) or 'none'})")
        path = path / split
    try:
        dataset = load_from_disk(str(path))
    except IndexError:                 # datasets cannot load a saved split without rows
        fail(f"the {split!r} split of {data} is empty")
    except (FileNotFoundError, ValueError) as err:
        fail(f"{data} is not a saved dataset folder (socialgym export / datasets save_to_disk): {err}")
    if hasattr(dataset, "keys"):
        fail(f"{data} is a dataset dict without dataset_dict.json")
    return dataset


def _load_jsonl(path: Path, data: str):
    """A JSONL file of rows, every line checked before datasets reads it (which logs and raises
    its own errors): a truncated last line is bad input naming the line, not a DatasetGenerationError."""
    from datasets import load_dataset
    rows = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            rows += 1
            try:
                if not isinstance(json.loads(line), dict):
                    raise ValueError("a row is a JSON object")
            except (ValueError, RecursionError) as err:
                where = "first line" if number == 1 else f"line {number}"
                fail(f"{data} is not a JSONL file of rows ({where}: {str(err)[:200]})")
    if not rows:
        fail(f"{data} is not a JSONL file of rows (it holds none)")
    return _quietly(lambda: load_dataset("json", data_files=str(path), split="train"))


def _check_columns(dataset, data: str, split: str, columns: tuple) -> None:
    """Bad input unless the rows are there and hold ``columns`` as TRL reads them: a text, or a
    list of chat messages."""
    if len(dataset) == 0:
        fail(f"the {split!r} split of {data} is empty")
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        fail(f"{data} lacks the columns {missing} (has {dataset.column_names})")
    for column in columns:
        feature = dataset.features[column]
        if not (getattr(feature, "dtype", None) in ("string", "large_string") or type(feature).__name__ in
                ("List", "Sequence", "LargeList") or isinstance(feature, list)):
            fail(f"{data}: column {column!r} holds {feature}, expected text or a list of chat messages")


def fit_dataset(dataset, tokenizer, columns: tuple, config):
    """(the rows as TRL gets them, the ``max_length`` they need, the fitting report): every row
    within ``max_length`` (``config.max_length``, or 0 = the longest row up to
    ``config.max_length_cap``), shortened on the prompt side when it must be, its completion
    whole (:mod:`socialgym_training.rows`); one log line says what was done and names the rows
    that cannot fit (left out). No row left is bad input."""
    from datasets import Dataset

    from socialgym_training.rows import describe_fit, fit_rows
    completions = tuple(c for c in columns if c != "prompt")
    rows, max_length, report = fit_rows(list(dataset), tokenizer, completions, config.max_length,
                                        config.max_length_cap)
    print(describe_fit(report), flush=True)
    if not rows:
        fail(f"no row of {config.data} fits in {max_length} tokens with its completion whole "
             f"(raise --max_length_cap or --max_length)")
    return Dataset.from_list(rows).select_columns(list(columns)), max_length, report


def last_checkpoint(output_dir: str) -> Optional[str]:
    from transformers.trainer_utils import get_last_checkpoint
    return get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None


def trainer_args(config, max_length: int) -> dict:
    """The TrainingArguments the SFT and DPO scripts take from their config (device, precision,
    progress) and the ``max_length`` their rows need (:func:`fit_dataset`)."""
    return dict(
        output_dir=str(Path(config.out) / "checkpoints"), num_train_epochs=config.epochs, max_steps=config.max_steps,
        learning_rate=config.learning_rate, lr_scheduler_type=config.lr_scheduler,
        warmup_steps=config.warmup_ratio,          # a float < 1 is a ratio (transformers 5)
        per_device_train_batch_size=config.batch_size, gradient_accumulation_steps=config.grad_accum,
        logging_steps=config.logging_steps, save_steps=config.save_steps, save_total_limit=2, seed=config.seed,
        report_to=[], max_length=max_length, gradient_checkpointing=config.gradient_checkpointing,
        dataloader_num_workers=0, disable_tqdm=not config.progress, **precision_args(config.device))


def train_and_save(trainer, config, extra: dict) -> dict:
    """Train (from the last checkpoint of a killed run when ``config.resume``), then write the
    outputs; ``extra`` goes into the metrics with ``resumed_from`` and ``wall_seconds``."""
    import time
    resume = last_checkpoint(trainer.args.output_dir) if config.resume else None
    started = time.time()
    trainer.train(resume_from_checkpoint=resume)
    metrics = write_outputs(trainer, config, config.out, {**extra, "resumed_from": resume,
                                                          "wall_seconds": round(time.time() - started, 1)})
    print_outputs(config.out)
    return metrics


def print_outputs(out) -> None:
    """The run's last line: where the adapter went, how to play it, and the metrics file."""
    adapter = Path(out) / "adapter"
    print(f"adapter: {adapter} (play it: --agents 'smollm2?adapter={adapter}'); "
          f"metrics: {Path(out) / 'metrics.json'}", flush=True)


def write_outputs(trainer, config, out: str, extra: Optional[dict] = None) -> dict:
    """``out/adapter`` (the LoRA weights the backend loads), ``out/config.json``, ``out/metrics.json``,
    each written atomically (the adapter folder as a whole). metrics.json goes first and comes
    back last: when it is there, the adapter and config beside it are of the same run. A NaN
    metric is written as null (JSON has no NaN)."""
    out_dir = Path(out)
    (out_dir / "metrics.json").unlink(missing_ok=True)
    with atomic_dir(out_dir / "adapter", marker="adapter_config.json") as adapter:
        trainer.model.save_pretrained(str(adapter))
        trainer.processing_class.save_pretrained(str(adapter))
    atomic_write_json(out_dir / "config.json", dataclasses.asdict(config), indent=2, sort_keys=True)
    history = trainer.state.log_history
    metrics = {"global_step": trainer.state.global_step, "log_history": history,
               "train": next((h for h in reversed(history) if "train_runtime" in h), {}), **(extra or {})}
    atomic_write_json(out_dir / "metrics.json", metrics, indent=2, sort_keys=True)
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
    with atomic_file(out / "reward_curve.csv", "w", newline="") as handle:
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
    atomic_savefig(fig, out / "reward_curve.png", dpi=120)
    plt.close(fig)


def write_json(path: Path, data) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def config_dict(config) -> dict:
    return dataclasses.asdict(config)


def grpo_args(out: Path, device: str = "auto", progress: bool = True, **overrides):
    """GRPOConfig for the GRPO scripts: the device's precision (:func:`precision_args`), log
    every step, no checkpoints, a progress bar unless ``progress`` is off."""
    from trl import GRPOConfig
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    base = dict(output_dir=str(out / "trainer"), logging_steps=1, save_strategy="no", report_to=[],
                disable_tqdm=not progress, dataloader_num_workers=0, **precision_args(device))
    base.update(overrides)
    return GRPOConfig(**base)


def finish_run(out: Path, config, before, after=None, trainer=None, started: float = 0.0,
               train_seconds: float = 0.0, curve_columns: Sequence[str] = (), title: str = "",
               extra: Optional[dict] = None) -> dict:
    """Save the reward curves (when a trainer ran) and ``metrics.json`` (with ``extra``'s fields);
    return the metrics."""
    import time
    metrics = {"config": config_dict(config), "before": before, **(extra or {})}
    if trainer is not None:
        save_curves(trainer.state.log_history, out, curve_columns, title)
        metrics.update(after=after, train_seconds=round(train_seconds, 1))
    metrics["total_seconds"] = round(time.time() - started, 1) if started else None
    write_json(out / "metrics.json", metrics)
    return metrics
