"""Ratings with intervals: the point fit plus a bootstrap or profile-likelihood interval per
competitor (:func:`rate`), and the fit with every game weighted equally (:func:`games_equal_fit`).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .battles import Battles, collect_battles, games_equal_battles
from .bootstrap import N_BOOTSTRAP, bootstrap_wins
from .fit import C_DEFAULT, fit_bt, fit_bt_batch
from .profile import profile_elo_intervals

@dataclass
class Ratings:
    """Elo point estimates with intervals (bootstrap or profile likelihood), per competitor;
    an unbounded side of an interval is infinite here and None in :meth:`as_dict`."""

    players: list
    elo: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    battles: np.ndarray          # battles each competitor took part in
    wins: np.ndarray             # battles each competitor won
    n_episodes: int
    samples: Optional[np.ndarray] = field(default=None, repr=False)
    interval: str = "bootstrap"          # how lo/hi were made (rate's ``interval``)

    def as_dict(self) -> dict:
        return {p: {"elo": float(self.elo[i]), "lo": finite_or_none(self.lo[i]), "hi": finite_or_none(self.hi[i]),
                    "battles": int(self.battles[i]), "battle_wins": int(self.wins[i])}
                for i, p in enumerate(self.players)}


def finite_or_none(value) -> Optional[float]:
    return float(value) if math.isfinite(value) else None


INTERVALS = ("bootstrap", "profile")


def rate(battles: Battles, n_boot: int = N_BOOTSTRAP, by: str = "episode", seed: int = 0,
         C: float = C_DEFAULT, level: float = 0.95, keep_samples: bool = False,
         interval: str = "bootstrap") -> Ratings:
    """Point fit plus a CI for one set of battles: the percentile bootstrap (``by`` episode
    or battle; the paper's choice) or the profile likelihood (:func:`profile_elo_intervals`,
    which keeps its coverage with few episodes and under separation). With ``keep_samples``
    the bootstrap resamples are drawn (and kept) either way."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    wins = battles.win_matrix()
    k = len(battles.players)
    elo = fit_bt(wins, C) if k else np.zeros(0)
    samples = None
    lo, hi = elo.copy(), elo.copy()
    if n_boot and k and battles.n and (interval == "bootstrap" or keep_samples):
        samples = fit_bt_batch(bootstrap_wins(battles, n_boot, by, seed), C, start=elo)
        alpha = (1.0 - level) / 2.0
        lo, hi = np.percentile(samples, [100 * alpha, 100 * (1 - alpha)], axis=0)
    if interval == "profile" and k and battles.n:
        lo, hi = profile_elo_intervals(battles, elo, level)
    played = wins.sum(0) + wins.sum(1)
    return Ratings(list(battles.players), elo, lo, hi, played, wins.sum(1), battles.n_episodes,
                   samples if keep_samples else None, interval)


def rate_records(records: Sequence[dict], *, label=None, compare: str = "reward",
                 players: Optional[Sequence[str]] = None, ties: str = "exclude", **kwargs) -> Ratings:
    return rate(collect_battles(records, label, compare, players, ties), **kwargs)


def stream_seed(seed: int, name: str) -> int:
    """The seed of one named fit's resamples, from the run's seed: each fit draws its own
    stream, so its interval does not depend on which other fits were made before it."""
    return (seed * 1_000_003 + zlib.crc32(name.encode())) % (2**32)


def games_equal_fit(parts: list, policies: list, opts: dict, name: str) -> dict:
    """{policy: {elo, lo, hi}} of the BT fit with every part (a game's battles) weighted to an
    equal share of the total (:func:`socialgym_benchmarks.ratings.battles.games_equal_battles`). Interval:
    with ``opts["interval"] == "profile"`` the profile likelihood of the weighted likelihood,
    its statistic divided by the weighted design effect (it keeps its coverage under separation,
    see ``socialgym_benchmarks.studies.interval_coverage``); else, when ``opts["n_boot"]``, the
    percentile bootstrap by episode within each part (stratified: every resample keeps each
    part's episode count and weight); else none (lo = hi = elo)."""
    parts = [b for b in parts if b.n]
    if not parts:
        return {}
    pooled = games_equal_battles(parts)
    wins = pooled.win_matrix()
    elo = fit_bt(wins, opts["C"])
    lo, hi = elo.copy(), elo.copy()
    if opts.get("interval") == "profile":
        lo, hi = profile_elo_intervals(pooled, elo)
    elif opts["n_boot"]:
        mean = pooled.n / len(parts)
        resampled = sum(mean / b.n * bootstrap_wins(b, opts["n_boot"], opts["by"], stream_seed(opts["seed"], f"{name}:{i}"))
                        for i, b in enumerate(parts))
        lo, hi = np.percentile(fit_bt_batch(resampled, opts["C"], start=elo), [2.5, 97.5], axis=0)
    played = wins.sum(0) + wins.sum(1)
    return {p: {"elo": float(elo[i]), "lo": finite_or_none(lo[i]), "hi": finite_or_none(hi[i])}
            for i, p in enumerate(policies) if played[i] > 0}
