"""Win-rate statistics of SPaRTan tables: Wilson 95% intervals (shared with the leaderboard),
the paired comparison of two arms played on the same seeds (exact McNemar / sign-flip test and
a paired bootstrap over seeds, from :mod:`socialgym_agents.paired`), and the pooled two-proportion z-test, kept for comparisons
where nothing is paired (rates known only as counts, e.g. a published table)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from scipy.stats import norm

from socialgym_agents.paired import MCNEMAR, PAIRED_BOOTSTRAP, SIGN_FLIP, PairedDelta, paired_delta, sign_flip_p  # noqa: F401
from socialgym_benchmarks.ratings import wilson_interval

# the paired comparison lives in socialgym_agents.paired (training compares checkpoints with it too)
__all__ = ["Rate", "rate", "two_proportion_test", "Delta", "delta", "wilson_interval", "sign_flip_p",
           "PairedDelta", "paired_delta", "MCNEMAR", "SIGN_FLIP", "TWO_SAMPLE", "PAIRED_BOOTSTRAP"]

TWO_SAMPLE = "two-proportion z-test (unpaired)"


@dataclass(frozen=True)
class Rate:
    """Strict wins out of n observations (a game for a team side, a seat-game for a symmetric
    game), with its Wilson 95% interval."""

    wins: int
    n: int
    lo: float
    hi: float

    @property
    def p(self) -> float:
        return self.wins / self.n if self.n else float("nan")

    def to_dict(self) -> dict:
        return dict(asdict(self), p=self.p)


def rate(wins: int, n: int) -> Rate:
    lo, hi = wilson_interval(wins, n)
    return Rate(int(wins), int(n), lo, hi)


def two_proportion_test(wins_a: int, n_a: int, wins_b: int, n_b: int,
                        alternative: str = "two-sided") -> tuple[float, float]:
    """Pooled z-test of p_a == p_b: (z, p-value), two-sided or one-sided (``greater``: p_a >
    p_b). With no variance (both rates 0 or both 1) or an empty sample there is no evidence of
    a difference: (0, 1)."""
    if n_a <= 0 or n_b <= 0:
        return 0.0, 1.0
    pooled = (wins_a + wins_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 0.0, 1.0
    z = (wins_a / n_a - wins_b / n_b) / se
    if alternative == "greater":
        return z, float(norm.sf(z))
    return z, float(2 * norm.sf(abs(z)))


@dataclass(frozen=True)
class Delta:
    """Treatment minus baseline, in percentage points, with the unpaired test's p-value."""

    points: float
    z: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


def delta(treated: Rate, baseline: Rate) -> Delta:
    z, p = two_proportion_test(treated.wins, treated.n, baseline.wins, baseline.n)
    points = 100 * (treated.p - baseline.p) if treated.n and baseline.n else float("nan")
    return Delta(points, z, p)
