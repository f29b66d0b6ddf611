"""Hidden-role detector as a probe: L2 logistic regression on frozen features, beside TF-IDF.

    python -m socialgym_training.probe --logs runs/detect_lm/logs --out runs/probe

The examples, split and metrics are the LoRA detector's (``socialgym_training.detector``): one
example per (episode, target player, cut point) from ``detection_data`` (the public lines the
target spoke or was named in, name masked as ``TARGET``), the per-episode train/test split of the
exports, and AUROC / accuracy / top-1 with 95% bootstrap intervals over test episodes
(``detection_eval``), per game and overall. ``--outer_folds K`` instead cross-fits K folds of
whole episodes (every episode tested once) for a log set too small for one 30% split. Nothing here
is trained into the language models:

- **SmolLM2 hidden states** (the embedded SmolLM2-135M, torch float32) at a sweep of layers
  (``--layers``; 0 is the embeddings, 30 the last, after the final norm). Pooling "per player":
  the example's text is already the observer's view of one player, so the model reads that text
  alone (left-truncated to ``--max_length`` tokens: the latest lines stay) and the feature is the
  mean of its hidden states over all those tokens.
- **MiniLM sentence embeddings** (the embedded all-MiniLM-L6-v2, as sentence-transformers uses
  it: mean over tokens, L2-normalised). Each line of the example is one sentence; the per-player
  feature is the mean of its lines' embeddings (no truncation of the whole text).

Each feature set feeds a standardised L2 logistic regression whose C is chosen by inner
cross-validation (AUROC, ``GroupKFold`` by episode) within the training episodes only. Which
feature set (SmolLM2 layer or MiniLM) is "the probe" is chosen the same way: the highest inner-CV
AUROC, so the test episodes choose nothing; the test figures of every layer are reported too, as a
secondary table (read them with the multiplicity of the sweep in mind). TF-IDF + logistic regression
is the detector's baseline, unchanged. "Stacked" is a logistic regression on the two models'
logits, fitted on their out-of-fold predictions within the training episodes. The paired
difference probe - TF-IDF (and stacked - TF-IDF) uses the same test-episode resamples for both.

Leak guard (``assert_public_only``): before any feature is computed, every input line must be,
name unmasked, a public transcript line the observer had seen by the cut, and no private text
(role lines, team chat) that was never said in public may appear in an input; otherwise the run
stops with the episode and player named.

Features are cached under ``--cache`` per (input digest, model, layer): the digest is of the
examples' texts in order, so new logs or a change to the example builder makes new files. A run
writes its features in chunks (atomic files) and puts each layer's matrix together at the end,
so a killed run picks up at the last chunk and a rerun reads the cache in seconds.

Writes to ``--out``: ``metrics.json`` (all methods, per game, the layer sweep, the selection, the
paired differences) and ``metrics.csv``.
"""
from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from socialgym_env.atomic import atomic_file
from socialgym_env.logs import iter_log_dir
from socialgym_training.configs import RunArgs, ThreadArgs
from socialgym_training.detection_data import TARGET, episode_examples, public_messages, usable
from socialgym_training.detection_eval import paired_difference


@dataclass
class Config(RunArgs, ThreadArgs):
    logs: str = "runs/detect_lm/logs"
    """A log file or a folder of them (socialgym_training.detection_logs writes them)"""
    games: str = ""
    """Comma-separated subset; empty = every detection game in the logs"""
    test_fraction: float = 0.3
    """Share of episodes in the test split (the detector's split: the same episodes)"""
    bootstrap: int = 1000
    """Bootstrap resamples (by test episode) of the metric intervals"""
    layers: str = "5,10,15,20,25,30"
    """SmolLM2 layers to probe (0 = embeddings, 30 = last); empty = no SmolLM2 features"""
    minilm: bool = True
    """Also probe MiniLM sentence embeddings"""
    max_length: int = 512
    """SmolLM2 tokens per example; longer inputs lose their oldest lines"""
    batch_size: int = 8
    """Examples per forward pass of the feature extraction"""
    inner_folds: int = 5
    """Folds (by episode, within the training episodes) of the inner CV that picks C and the probe"""
    c_grid: str = "0.001,0.01,0.1,1,10"
    """Inverse L2 strengths the inner CV chooses from"""
    outer_folds: int = 0
    """0 = the detector's train/test split (the test episodes of its TF-IDF and LoRA figures);
    K >= 2 = cross-fitting for a log set too small for one split: K folds of whole episodes, each
    predicted by models fitted on the others (inner CV within those), so every episode is tested once"""
    cache: str = "~/.cache/socialgym/probe_features"
    """Feature cache (per input digest, model and layer; safe to share between runs)"""
    out: str = "runs/probe"


# ----------------------------------------------------------------------------- examples and the leak guard
class LeakError(ValueError):
    """An input holds text the public observer could not have seen."""


def load_records(logs: str, games: Sequence[str] = ()) -> list[dict]:
    return [r for r in iter_log_dir(Path(logs)) if usable(r) and (not games or r["game"] in games)]


def assert_public_only(record: dict, examples) -> None:
    """Raise :class:`LeakError` if an example of ``record`` holds a line that is not a public
    transcript line seen by its cut, or a private text (a role line) never said in public."""
    names = {seat["agent"]: seat["name"] for seat in record["roster"]}
    public = public_messages(record)
    said = "\n".join(m["line"] for m in public)
    private = [m["text"] for m in record["messages"]
               if m.get("visibility") != "public" and m["text"].strip() and m["text"] not in said]
    for ex in examples:
        seen = {m["line"] for m in public[:ex.cut]}
        for line in ex.text.split("\n"):
            if line != f"({TARGET} has not been mentioned)" and line.replace(TARGET, names[ex.target]) not in seen:
                raise LeakError(f"episode {ex.episode_id}, {ex.target}: input line {line[:80]!r} is not a public "
                                f"line seen by cut {ex.cut}")
        unmasked = ex.text.replace(TARGET, names[ex.target])
        for text in private:
            if text in unmasked:
                raise LeakError(f"episode {ex.episode_id}, {ex.target}: input holds the private text {text[:80]!r}")


def guarded_examples(records: Sequence[dict]) -> list:
    """Every example of ``records``, each episode's checked by :func:`assert_public_only`."""
    out = []
    for record in records:
        examples = episode_examples(record)
        assert_public_only(record, examples)
        out.extend(examples)
    return out


# ----------------------------------------------------------------------------- frozen features
def input_digest(examples) -> str:
    """Names the feature cache: the examples' texts (and keys) in order."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(f"{ex.episode_id}\x1f{ex.target}\x1f{ex.cut}\x1f{ex.text}\x1e".encode())
    return h.hexdigest()[:20]


def mean_pool(hidden, mask):
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


class SmolLM2Features:
    """Mean-pooled hidden states of the embedded SmolLM2 at ``layers`` (one forward pass)."""

    def __init__(self, layers: Sequence[int], max_length: int = 512):
        self.layers, self.max_length = list(layers), max_length
        self.name = f"smollm2-f32-len{max_length}-mean"
        self._model = None

    @staticmethod
    def feature_name(layer) -> str:
        return f"smollm2_L{layer}"

    def _load(self):
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from socialgym_training.detector import base_model_dir
        folder = base_model_dir("smollm2")
        n_layers = AutoConfig.from_pretrained(folder, local_files_only=True).num_hidden_layers
        bad = [layer for layer in self.layers if not 0 <= layer <= n_layers]
        if bad:
            raise ValueError(f"--layers {bad}: SmolLM2 has layers 0..{n_layers}")
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        # right padding keeps real tokens at their positions; left truncation keeps the latest lines
        self.tokenizer.padding_side, self.tokenizer.truncation_side = "right", "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._model = AutoModel.from_pretrained(folder, local_files_only=True, dtype=torch.float32).eval()

    def encode(self, texts: Sequence[str]) -> dict:
        import torch
        if self._model is None:
            self._load()
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="pt")
        with torch.no_grad():
            states = self._model(**batch, output_hidden_states=True).hidden_states
        return {layer: mean_pool(states[layer], batch["attention_mask"]).numpy() for layer in self.layers}


class MiniLMFeatures:
    """all-MiniLM-L6-v2 sentence embeddings of each line, averaged over the example's lines."""

    layers = ["lines"]
    name = "minilm-l6-v2-line-mean"

    @staticmethod
    def feature_name(layer) -> str:
        return "minilm"

    def __init__(self):
        self._model = None
        self._seen: dict[str, np.ndarray] = {}     # line -> embedding: the cuts of one player share lines

    def _embed(self, sentences: list[str]) -> np.ndarray:
        import torch
        if self._model is None:
            from transformers import AutoModel, AutoTokenizer
            from socialgym_training.detector import base_model_dir
            folder = base_model_dir("minilm")
            self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            self._model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
        batch = self.tokenizer(sentences, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            pooled = mean_pool(self._model(**batch).last_hidden_state, batch["attention_mask"])
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()

    def encode(self, texts: Sequence[str]) -> dict:
        lines = [text.split("\n") for text in texts]
        new = sorted({line for text in lines for line in text} - set(self._seen))
        if new:
            self._seen.update(zip(new, self._embed(new)))
        return {"lines": np.stack([np.mean([self._seen[line] for line in text], axis=0) for text in lines])}


class FeatureCache:
    """``ROOT/<digest>/<model>/layer<L>.npy``; ``parts/`` holds a run's chunks until it is done."""

    def __init__(self, root, digest: str, model: str):
        self.folder = Path(root).expanduser() / digest / model

    def layer_path(self, layer) -> Path:
        return self.folder / f"layer{layer}.npy"

    def load(self, layers) -> dict | None:
        paths = {layer: self.layer_path(layer) for layer in layers}
        if not all(p.is_file() for p in paths.values()):
            return None
        return {layer: np.load(p) for layer, p in paths.items()}

    def parts(self, layers) -> Path:
        """Chunks of a run not yet put together (named by the layer set they hold)."""
        return self.folder / ("parts-" + "-".join(map(str, layers)))

    @staticmethod
    def save_chunk(path: Path, arrays: dict) -> None:
        with atomic_file(path, "wb") as handle:
            np.savez(handle, **arrays)

    def save_layer(self, layer, matrix: np.ndarray) -> None:
        with atomic_file(self.layer_path(layer), "wb") as handle:
            np.save(handle, matrix)


def extract(extractor, texts: Sequence[str], cache: FeatureCache, batch_size: int, chunk: int = 64) -> dict:
    """``{layer: (len(texts), dim) array}``, from the cache or computed in resumable chunks."""
    found = cache.load(extractor.layers)
    if found is not None:
        return found
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))     # similar lengths batch together
    parts = cache.parts(extractor.layers)
    started, computed = time.time(), 0
    for start in range(0, len(order), chunk):
        path = parts / f"{start:07d}.npz"
        if path.is_file():
            continue
        idx = order[start:start + chunk]
        pieces = [extractor.encode([texts[i] for i in idx[b:b + batch_size]]) for b in range(0, len(idx), batch_size)]
        cache.save_chunk(path, {f"l{layer}": np.concatenate([p[layer] for p in pieces]) for layer in extractor.layers})
        computed += len(idx)
        print(f"  {extractor.name}: {start + len(idx)}/{len(texts)} examples ({time.time() - started:.0f} s)", flush=True)
    out = {}
    for layer in extractor.layers:
        chunks = [np.load(parts / f"{s:07d}.npz")[f"l{layer}"] for s in range(0, len(order), chunk)]
        matrix = np.empty((len(texts), chunks[0].shape[1]), dtype=np.float32)
        matrix[order] = np.concatenate(chunks)
        cache.save_layer(layer, matrix)
        out[layer] = matrix
    shutil.rmtree(parts)
    return out


# ----------------------------------------------------------------------------- probes and stacking
def grouped_folds(groups, n_folds: int):
    from sklearn.model_selection import GroupKFold
    return GroupKFold(n_splits=min(n_folds, len(set(groups))))


def fit_probe(x_train, y_train, groups, x_test, c_grid: Sequence[float], n_folds: int, seed: int = 0) -> dict:
    """Standardised L2 logistic regression, C by grouped inner CV on the training rows only.
    Returns test probabilities, out-of-fold training probabilities, the chosen C and its CV AUROC."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000, random_state=seed))
    folds = grouped_folds(groups, n_folds)
    search = GridSearchCV(pipe, {"logisticregression__C": list(c_grid)}, scoring="roc_auc", cv=folds)
    search.fit(x_train, y_train, groups=groups)
    oof = cross_val_predict(search.best_estimator_, x_train, y_train, groups=groups, cv=folds,
                            method="predict_proba")[:, 1]
    return {"test": search.predict_proba(x_test)[:, 1], "oof": oof, "C": search.best_params_["logisticregression__C"],
            "inner_auroc": float(search.best_score_)}


def tfidf_oof(train, groups, n_folds: int, seed: int) -> np.ndarray:
    """Out-of-fold TF-IDF probabilities within the training episodes (the detector's pipeline)."""
    from socialgym_training.detector import tfidf_logreg_probs
    oof = np.zeros(len(train))
    for fit_idx, held_idx in grouped_folds(groups, n_folds).split(train, groups=groups):
        oof[held_idx] = tfidf_logreg_probs([train[i] for i in fit_idx], [train[i] for i in held_idx], seed)
    return oof


def logit(p):
    p = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def stack(oof_columns: Sequence[np.ndarray], y_train, test_columns: Sequence[np.ndarray]) -> np.ndarray:
    """A logistic regression on the base models' logits, fitted on their out-of-fold predictions."""
    from sklearn.linear_model import LogisticRegression
    meta = LogisticRegression(max_iter=1000).fit(np.column_stack([logit(c) for c in oof_columns]), y_train)
    return meta.predict_proba(np.column_stack([logit(c) for c in test_columns]))[:, 1]


# ----------------------------------------------------------------------------- the run
def split_indices(examples, test_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """The detector's split (``split_episodes``), as indices into ``examples``."""
    from socialgym_training.export import in_test_split
    test = [i for i, ex in enumerate(examples) if in_test_split(ex.episode_id, test_fraction, seed)]
    chosen = set(test)
    return [i for i in range(len(examples)) if i not in chosen], test


def build_extractors(cfg: Config) -> list:
    """The feature extractors ``cfg`` asks for; bad options are one line and exit 2."""
    from socialgym_training.common import fail
    try:
        layers = [int(x) for x in cfg.layers.split(",") if x.strip()]
        c_grid = [float(c) for c in cfg.c_grid.split(",")]
    except ValueError:
        fail(f"--layers takes layer numbers and --c_grid positive numbers, comma-separated "
             f"(got {cfg.layers!r} and {cfg.c_grid!r})")
    if not c_grid or min(c_grid) <= 0 or cfg.inner_folds < 2:
        fail("--c_grid needs positive values and --inner_folds at least 2")
    extractors = ([SmolLM2Features(layers, cfg.max_length)] if layers else []) + ([MiniLMFeatures()] if cfg.minilm else [])
    if not extractors:
        fail("nothing to probe: give --layers or --minilm true")
    return extractors


def feature_sets(cfg: Config, extractors, examples) -> dict:
    """``{name: (n_examples, dim) array}`` for every probed feature set."""
    from socialgym_training.common import fail
    digest, texts, out = input_digest(examples), [ex.text for ex in examples], {}
    for extractor in extractors:
        started = time.time()
        try:
            arrays = extract(extractor, texts, FeatureCache(cfg.cache, digest, extractor.name), cfg.batch_size)
        except ValueError as err:
            fail(str(err))
        print(f"{extractor.name}: features of {len(texts)} examples ready in {time.time() - started:.0f} s", flush=True)
        for layer, matrix in arrays.items():
            out[extractor.feature_name(layer)] = matrix
    return out


def run_probes(cfg: Config, examples, features: dict, train_idx, test_idx) -> dict:
    """Test probabilities of TF-IDF, every probe, the selected probe and the stacks, plus the
    inner-CV record of each probe."""
    from socialgym_training.detector import tfidf_logreg_probs
    train, test = [examples[i] for i in train_idx], [examples[i] for i in test_idx]
    y_train = np.array([ex.label for ex in train])
    groups = np.array([ex.episode_id for ex in train])
    c_grid = [float(c) for c in cfg.c_grid.split(",")]
    probs = {"tfidf_logreg": tfidf_logreg_probs(train, test, cfg.seed)}
    fits = {name: fit_probe(x[train_idx], y_train, groups, x[test_idx], c_grid, cfg.inner_folds, cfg.seed)
            for name, x in features.items()}
    for name, fit in fits.items():
        probs[f"probe_{name}"] = fit["test"]
    selected = max(fits, key=lambda name: fits[name]["inner_auroc"])     # chosen on training folds only
    probs["probe_selected"] = fits[selected]["test"]
    tfidf_train = tfidf_oof(train, groups, cfg.inner_folds, cfg.seed)
    probs["stacked"] = stack([tfidf_train, fits[selected]["oof"]], y_train, [probs["tfidf_logreg"], fits[selected]["test"]])
    inner = {name: {"C": fit["C"], "inner_auroc": fit["inner_auroc"]} for name, fit in fits.items()}
    return {"probs": probs, "selected": selected, "inner_cv": inner}


def cross_fitted(cfg: Config, examples, features: dict) -> dict:
    """:func:`run_probes` over ``cfg.outer_folds`` folds of whole episodes; each example's
    probabilities come from the fold that held it out. ``selected`` and ``inner_cv`` are per fold."""
    groups = [ex.episode_id for ex in examples]
    probs, selected, inner = {}, [], []
    for train_idx, test_idx in grouped_folds(groups, cfg.outer_folds).split(examples, groups=groups):
        run = run_probes(cfg, examples, features, list(train_idx), list(test_idx))
        for name, values in run["probs"].items():
            probs.setdefault(name, np.zeros(len(examples)))[test_idx] = values
        selected.append(run["selected"])
        inner.append(run["inner_cv"])
    return {"probs": probs, "selected": selected, "inner_cv": inner}


def load_inputs(cfg: Config) -> tuple:
    """(examples, train indices, test indices): the logs' examples through the leak guard, split
    by episode as the detector splits them (with ``--outer_folds``, every example is tested:
    :func:`cross_fitted` makes the folds); bad input is one line and exit 2."""
    from socialgym_training.common import fail
    if not Path(cfg.logs).exists():
        fail(f"no log file or folder at {cfg.logs}")
    try:
        examples = guarded_examples(load_records(cfg.logs, [g for g in cfg.games.split(",") if g]))
    except LeakError as err:
        fail(f"leak guard: {err}")
    if not examples:
        fail(f"no detection examples in {cfg.logs} (hidden-role game logs expected)")
    if cfg.outer_folds:
        n_episodes = len({ex.episode_id for ex in examples})
        if not 2 <= cfg.outer_folds <= n_episodes:
            fail(f"--outer_folds {cfg.outer_folds}: give 0 (one split) or 2..{n_episodes} (the episodes in the logs)")
        print(f"{len(examples)} examples of {n_episodes} episodes, {cfg.outer_folds} outer folds by episode", flush=True)
        return examples, list(range(len(examples))), list(range(len(examples)))
    train_idx, test_idx = split_indices(examples, cfg.test_fraction, cfg.seed)
    if not train_idx or not test_idx:
        fail(f"--test_fraction {cfg.test_fraction} with --seed {cfg.seed} puts every episode on one side")
    print(f"{len(train_idx)} train / {len(test_idx)} test examples ({len({examples[i].episode_id for i in train_idx})}"
          f" / {len({examples[i].episode_id for i in test_idx})} episodes)", flush=True)
    return examples, train_idx, test_idx


def paired_by_game(test, probs: dict, n_boot: int, seed: int) -> dict:
    """AUROC of the selected probe and of the stack minus TF-IDF's, overall and per game, paired."""
    splits = {"all": list(range(len(test)))}
    for game in sorted({ex.game for ex in test}):
        splits[game] = [i for i, ex in enumerate(test) if ex.game == game]
    return {name: {split: paired_difference([test[i] for i in idx], probs[name][idx], probs["tfidf_logreg"][idx],
                                            "auroc", n_boot, seed)
                   for split, idx in splits.items()}
            for name in ("probe_selected", "stacked")}


def main(cfg: Config) -> dict:
    import torch
    from socialgym_training.detector import evaluate_by_game, print_table, write_metrics
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    extractors = build_extractors(cfg)
    examples, train_idx, test_idx = load_inputs(cfg)
    test = [examples[i] for i in test_idx]
    started = time.time()
    features = feature_sets(cfg, extractors, examples)
    run = (cross_fitted(cfg, examples, features) if cfg.outer_folds
           else run_probes(cfg, examples, features, train_idx, test_idx))
    probs = run["probs"]
    results = {"config": asdict(cfg), "seconds": round(time.time() - started, 1), "n_train": len(train_idx),
               "n_test": len(test_idx), "selected": run["selected"], "inner_cv": run["inner_cv"],
               "methods": {name: evaluate_by_game(test, p, cfg.bootstrap, cfg.seed) for name, p in probs.items()},
               "paired_vs_tfidf": paired_by_game(test, probs, cfg.bootstrap, cfg.seed)}
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    write_metrics(results, out)
    print_table(results)
    print(f"probe chosen by inner CV: {run['selected']}; paired " + "; ".join(
        f"{name} - tfidf AUROC {d['all']['value']:+.3f} [{d['all']['low']:+.2f}, {d['all']['high']:+.2f}]"
        for name, d in results["paired_vs_tfidf"].items()))
    print(f"metrics in {out / 'metrics.json'}")
    return results


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    from socialgym_training.common import parse_config

    main_of(lambda: main(parse_config(Config)), "socialgym_training.probe")
