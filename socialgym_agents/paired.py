"""The paired comparison of two arms played on the same seeds: treated minus baseline win rate
with an exact McNemar / sign-flip test and a paired bootstrap interval over seeds. SPaRTan's
tables (:mod:`socialgym_benchmarks.studies.spartan.stats`) and self-play's before/after evaluation
(:mod:`socialgym_training.selfplay`) both use it: with common seeds (the same deals, the same seats) a
paired test sees an effect that two unpaired intervals hide."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["BOOTSTRAP_RESAMPLES", "MCNEMAR", "SIGN_FLIP", "PAIRED_BOOTSTRAP", "sign_flip_p", "PairedDelta",
           "paired_delta"]

BOOTSTRAP_RESAMPLES = 2000
MCNEMAR = "exact McNemar (paired by seed)"
SIGN_FLIP = "exact sign-flip test over seeds (McNemar for pooled seats)"
PAIRED_BOOTSTRAP = f"paired bootstrap over seeds ({BOOTSTRAP_RESAMPLES} resamples, percentile 95%)"


def sign_flip_p(differences: Sequence[int], alternative: str = "two-sided") -> float:
    """Exact p-value of the paired sign-flip test: under H0 each seed's difference (treated wins
    minus baseline wins, an integer) is as likely to have either sign. The null distribution of
    the sum is built exactly by convolution. With one pair per seed the differences are -1/0/+1
    and this is the exact McNemar test (binomial on the discordant pairs)."""
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, got {alternative!r}")
    values = [abs(int(d)) for d in differences if int(d) != 0]
    observed = int(sum(int(d) for d in differences))
    if not values:
        return 1.0
    total = sum(values)
    dist = np.zeros(2 * total + 1)          # index s + total holds P(sum = s)
    dist[total] = 1.0
    for v in values:
        dist = 0.5 * (np.roll(dist, v) + np.roll(dist, -v))   # no wrap: |sum| <= total always
    sums = np.arange(-total, total + 1)
    if alternative == "greater":
        p = dist[sums >= observed].sum()
    elif alternative == "less":
        p = dist[sums <= observed].sum()
    else:
        p = dist[np.abs(sums) >= abs(observed)].sum()
    return float(min(1.0, p))


@dataclass(frozen=True)
class PairedDelta:
    """Treated minus baseline over the seeds both arms completed, in percentage points of the
    observations (a seat-game for pooled symmetric sides), with the exact paired test's p-value
    and a paired bootstrap interval; ``test`` and ``interval`` name the methods."""

    points: float
    lo: float
    hi: float
    p_value: float
    pairs: int             # seeds paired
    observations: int      # paired observations (seeds x pooled seats)
    test: str
    interval: str = PAIRED_BOOTSTRAP

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


def paired_delta(per_seed: dict, seed: int = 0, alternative: str = "two-sided") -> PairedDelta:
    """``per_seed``: {seed: (treated wins, baseline wins, paired observations)}. The bootstrap
    resamples seeds (every pooled seat of a seed moves together) with a fixed generator, so the
    interval is reproducible."""
    keys = sorted(per_seed, key=str)
    if not keys:
        nan = float("nan")
        return PairedDelta(nan, nan, nan, 1.0, 0, 0, MCNEMAR)
    treated = np.array([per_seed[k][0] for k in keys], dtype=float)
    base = np.array([per_seed[k][1] for k in keys], dtype=float)
    m = np.array([per_seed[k][2] for k in keys], dtype=float)
    diff = treated - base
    points = 100.0 * diff.sum() / m.sum()
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(keys), size=(BOOTSTRAP_RESAMPLES, len(keys)))
    boot = 100.0 * diff[picks].sum(1) / m[picks].sum(1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    test = MCNEMAR if np.all(m == 1) else SIGN_FLIP
    return PairedDelta(float(points), float(lo), float(hi), sign_flip_p(diff.astype(int), alternative),
                       len(keys), int(m.sum()), test)
