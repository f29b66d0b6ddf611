"""Detector metrics with bootstrap intervals over episodes.

- accuracy: predicted probability >= 0.5 against the hidden-side label;
- AUROC: ranking of hidden-side targets above the others (scikit-learn);
- top-1: per (episode, cut), is the most suspected player on the hidden side.

Intervals resample whole episodes with replacement (examples of one episode are dependent), 95%
percentile intervals.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

METRICS = ("accuracy", "auroc", "top1")


def _groups(examples) -> dict:
    """(episode, cut) -> example indices."""
    groups = defaultdict(list)
    for i, ex in enumerate(examples):
        groups[(ex.episode_id, ex.cut)].append(i)
    return groups


def metric_values(labels: np.ndarray, probs: np.ndarray, groups: Sequence[np.ndarray]) -> dict:
    """The three metrics for one set of examples; ``groups`` index the (episode, cut) groups."""
    out = {"accuracy": float(np.mean((probs >= 0.5) == (labels == 1)))}
    out["auroc"] = float(roc_auc_score(labels, probs)) if len(set(labels.tolist())) == 2 else float("nan")
    hits = [labels[g[np.argmax(probs[g])]] == 1 for g in groups if labels[g].any()]
    out["top1"] = float(np.mean(hits)) if hits else float("nan")
    return out


def evaluate(examples, probs, n_boot: int = 1000, seed: int = 0) -> dict:
    """``{metric: {"value", "low", "high"}}`` plus ``n_examples`` and ``n_episodes``."""
    labels = np.array([ex.label for ex in examples])
    probs = np.asarray(probs, dtype=float)
    groups = _groups(examples)
    point = metric_values(labels, probs, [np.array(g) for g in groups.values()])
    # per episode: its example indices and its groups' indices, so a resample is a concatenation
    episodes = sorted({ex.episode_id for ex in examples})
    ep_index = {e: i for i, e in enumerate(episodes)}
    ep_examples = [[] for _ in episodes]
    ep_groups = [[] for _ in episodes]
    for i, ex in enumerate(examples):
        ep_examples[ep_index[ex.episode_id]].append(i)
    for (episode, _), members in groups.items():
        ep_groups[ep_index[episode]].append(np.array(members))
    rng = np.random.default_rng(seed)
    samples = defaultdict(list)
    for _ in range(n_boot):
        pick = rng.integers(0, len(episodes), len(episodes))
        idx, grp, offset = [], [], 0
        for e in pick:
            members = ep_examples[e]
            # re-index this copy's groups into the concatenated arrays
            remap = {old: offset + j for j, old in enumerate(members)}
            grp.extend(np.array([remap[k] for k in g]) for g in ep_groups[e])
            idx.extend(members)
            offset += len(members)
        values = metric_values(labels[idx], probs[idx], grp)
        for name, value in values.items():
            if not np.isnan(value):
                samples[name].append(value)
    out = {"n_examples": len(examples), "n_episodes": len(episodes)}
    for name in METRICS:
        draws = samples[name]
        low, high = (np.percentile(draws, [2.5, 97.5]).tolist() if draws else (float("nan"),) * 2)
        out[name] = {"value": point[name], "low": low, "high": high}
    return out


def mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and a 95% t interval over seeds (the mean alone when there is one value)."""
    from scipy import stats
    values = np.asarray([v for v in values if not np.isnan(v)], dtype=float)
    if len(values) == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(values.mean())
    if len(values) < 2:
        return mean, mean, mean
    half = float(stats.sem(values) * stats.t.ppf(0.975, len(values) - 1))
    return mean, mean - half, mean + half


if __name__ == "__main__":
    from socialgym_env.cli_errors import library_only
    library_only("socialgym_training.detection_eval", "to train and evaluate a detector run: python -m socialgym_training.detector --logs LOGS")
