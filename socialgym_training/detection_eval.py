"""Detector metrics with bootstrap intervals over episodes.

- accuracy: predicted probability >= 0.5 against the hidden-side label;
- AUROC: ranking of hidden-side targets above the others (the Mann-Whitney statistic);
- top-1: per (episode, cut), is the most suspected player on the hidden side.

Intervals resample whole episodes with replacement (examples of one episode are dependent), 95%
percentile intervals.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
from scipy.stats import rankdata

METRICS = ("accuracy", "auroc", "top1")


def _groups(examples) -> dict:
    """(episode, cut) -> example indices."""
    groups = defaultdict(list)
    for i, ex in enumerate(examples):
        groups[(ex.episode_id, ex.cut)].append(i)
    return groups


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve as the Mann-Whitney statistic (ties count one half): the value
    ``sklearn.metrics.roc_auc_score`` gives, without its per-call checks, which dominated the
    thousands of calls of a bootstrap; NaN unless both classes are present."""
    positive = labels == 1
    n_pos = int(positive.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def metric_values(labels: np.ndarray, probs: np.ndarray, groups: Sequence[np.ndarray]) -> dict:
    """The three metrics for one set of examples; ``groups`` index the (episode, cut) groups."""
    out = {"accuracy": float(np.mean((probs >= 0.5) == (labels == 1)))}
    out["auroc"] = auroc(labels, probs)
    hits = [labels[g[np.argmax(probs[g])]] == 1 for g in groups if labels[g].any()]
    out["top1"] = float(np.mean(hits)) if hits else float("nan")
    return out


def episode_resamples(examples, n_boot: int, seed: int):
    """Yield ``(example indices, (episode, cut) groups re-indexed into them)`` for ``n_boot``
    resamples of whole episodes with replacement. The draws depend on the episodes, ``n_boot`` and
    ``seed`` alone, so two methods scored on the same examples see the same resamples (paired)."""
    groups = _groups(examples)
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
        yield idx, grp


def _interval(draws) -> tuple:
    return tuple(np.percentile(draws, [2.5, 97.5]).tolist()) if draws else (float("nan"),) * 2


def evaluate(examples, probs, n_boot: int = 1000, seed: int = 0) -> dict:
    """``{metric: {"value", "low", "high"}}`` plus ``n_examples`` and ``n_episodes``."""
    labels = np.array([ex.label for ex in examples])
    probs = np.asarray(probs, dtype=float)
    point = metric_values(labels, probs, [np.array(g) for g in _groups(examples).values()])
    samples = defaultdict(list)
    for idx, grp in episode_resamples(examples, n_boot, seed):
        values = metric_values(labels[idx], probs[idx], grp)
        for name, value in values.items():
            if not np.isnan(value):
                samples[name].append(value)
    out = {"n_examples": len(examples), "n_episodes": len({ex.episode_id for ex in examples})}
    for name in METRICS:
        low, high = _interval(samples[name])
        out[name] = {"value": point[name], "low": low, "high": high}
    return out


def paired_difference(examples, probs_a, probs_b, metric: str = "auroc", n_boot: int = 1000,
                      seed: int = 0) -> dict:
    """``metric(a) - metric(b)`` on the same examples, with a 95% interval from the same episode
    resamples for both (paired: an interval that excludes 0 says the two differ)."""
    labels = np.array([ex.label for ex in examples])
    probs_a, probs_b = np.asarray(probs_a, dtype=float), np.asarray(probs_b, dtype=float)
    groups = [np.array(g) for g in _groups(examples).values()]
    point = metric_values(labels, probs_a, groups)[metric] - metric_values(labels, probs_b, groups)[metric]
    draws = []
    for idx, grp in episode_resamples(examples, n_boot, seed):
        diff = (metric_values(labels[idx], probs_a[idx], grp)[metric]
                - metric_values(labels[idx], probs_b[idx], grp)[metric])
        if not np.isnan(diff):
            draws.append(diff)
    low, high = _interval(draws)
    return {"value": float(point), "low": low, "high": high}


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
