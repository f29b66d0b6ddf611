"""Win-rate statistics of SPaRTan tables: Wilson 95% intervals (shared with the leaderboard)
and the pooled two-proportion z-test used for every delta against a baseline."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from scipy.stats import norm

from ..elo import wilson_interval

__all__ = ["Rate", "rate", "two_proportion_test", "Delta", "delta", "wilson_interval"]


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


def two_proportion_test(wins_a: int, n_a: int, wins_b: int, n_b: int) -> tuple[float, float]:
    """Pooled two-sided z-test of p_a == p_b: (z, p-value). With no variance (both rates 0 or
    both 1) or an empty sample there is no evidence of a difference: (0, 1)."""
    if n_a <= 0 or n_b <= 0:
        return 0.0, 1.0
    pooled = (wins_a + wins_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 0.0, 1.0
    z = (wins_a / n_a - wins_b / n_b) / se
    return z, float(2 * norm.sf(abs(z)))


@dataclass(frozen=True)
class Delta:
    """Treatment minus baseline, in percentage points, with the test's p-value."""

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
