"""Bootstrap resamples of the win counts: by episode (default) or by battle (the paper's).

Resamples are drawn exactly but cheaply: episodes (or battles) with identical contributions are
grouped, so one multinomial draw over the distinct contribution patterns is a full resample of
all episodes (:func:`multinomial_counts`; with many patterns, Poisson counts read from CDF
lookup tables, :func:`poisson_counts`, topped up to the exact multinomial). The resampled
matrices are fitted all at once by :func:`socialgym_benchmarks.ratings.fit.fit_bt_batch`.
"""
from __future__ import annotations

import math

import numpy as np

from .battles import Battles

N_BOOTSTRAP = 1000


def episode_patterns(battles: Battles):
    """The distinct contributions of single episodes to the win-count cells, as a sparse
    (patterns, k*k) matrix, and how many episodes make each. An episode contributes one count
    per battle to its cell (a cell twice when a pairing repeats in it); episodes without
    battles make the empty pattern, which resamples keep drawing. Episodes are grouped by
    their sorted cell lists (as wide as the most battles in one episode), never by dense
    k*k rows: 50 competitors would make those 2,500 wide."""
    from scipy.sparse import csr_matrix
    k, n_episodes = len(battles.players), battles.n_episodes
    cells = battles.winner * k + battles.loser
    # battles come grouped by episode, so this sort (stable: timsort) has little to do
    order = np.argsort(battles.episode * (k * k) + cells, kind="stable")
    episode, cells = battles.episode[order], cells[order]
    per_episode = np.bincount(episode, minlength=n_episodes)
    slot = np.arange(cells.size) - np.repeat(np.cumsum(per_episode) - per_episode, per_episode)
    width = max(int(per_episode.max(initial=0)), 1)
    table = np.full((n_episodes, width), -1, dtype=np.int64)
    table[episode, slot] = cells
    base = k * k + 1
    if base ** width <= 1 << 22:                    # few possible rows: count them (30x a sort)
        digit = base ** np.arange(width, dtype=np.int64)
        per_key = np.bincount((table + 1) @ digit)
        key = np.flatnonzero(per_key)
        counts, rows = per_key[key], key[:, None] // digit % base - 1
    elif base ** width < 2 ** 62:                   # a row fits one integer: a 1-d unique, ~6x faster
        key = (table + 1) @ (base ** np.arange(width, dtype=np.int64))
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        rows = table[first]
    else:
        rows, counts = np.unique(table, axis=0, return_counts=True)
    pattern, position = np.nonzero(rows >= 0)
    patterns = csr_matrix((np.ones(pattern.size), (pattern, rows[pattern, position])),
                          shape=(rows.shape[0], k * k))          # repeated cells are summed
    return patterns, counts


EPISODE_DRAW_ENTRIES = 1 << 22


def bootstrap_wins(battles: Battles, n_boot: int = N_BOOTSTRAP, by: str = "episode",
                   seed: int = 0) -> np.ndarray:
    """(n_boot, k, k) resampled win-count matrices. ``by="episode"`` resamples whole episodes
    with replacement (default: pairs from one episode move together; float sums of their
    patterns); ``by="battle"`` is the paper's multinomial bootstrap on the battle counts
    (integers)."""
    k = len(battles.players)
    rng = np.random.default_rng(seed)
    if by == "episode":
        if battles.n_episodes == 0:
            return np.zeros((n_boot, k, k))
        if np.bincount(battles.episode, minlength=1).max() <= 1:
            # at most one battle an episode (every two-seat game): an episode's pattern is its
            # battle's cell, or nothing; one multinomial over the cells and the empty episodes
            with_empty = np.append(battles.cell_counts(), battles.n_episodes - battles.n)
            draws = multinomial_counts(rng, with_empty, n_boot)[:, :k * k]
            return draws.astype(float).reshape(n_boot, k, k)
        patterns, counts = episode_patterns(battles)
        wins = np.empty((n_boot, k * k))
        # draws are (resamples, patterns), up to a pattern an episode: drawn in blocks of
        # resamples of ~4M draws (32 MB), not all at once (8 GB at 1M distinct episodes)
        block = max(1, min(n_boot, EPISODE_DRAW_ENTRIES // counts.size))
        for first in range(0, n_boot, block):
            draws = multinomial_counts(rng, counts, min(block, n_boot - first))
            wins[first:first + draws.shape[0]] = (patterns.T @ draws.T).T   # float64: exact sums
        return wins.reshape(n_boot, k, k)
    if by != "battle":
        raise ValueError(f"bootstrap by must be 'episode' or 'battle', got {by!r}")
    cells = battles.cell_counts()
    if not cells.any():
        return np.zeros((n_boot, k, k))
    return multinomial_counts(rng, cells, n_boot).reshape(n_boot, k, k)    # a battle is one cell


def multinomial_counts(rng: np.random.Generator, counts: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws from Multinomial(total, counts / total), total = counts.sum(): each row
    is how many times each item is picked when ``total`` items are drawn with replacement.

    NumPy's sampler takes one binomial per category per row. With many categories and few
    items per category (the battle cells of 50 competitors) a cheaper exact route is:
    independent Poisson(mu * p) counts (:func:`poisson_counts`) with mu = total - 2 sqrt(total), which given their sum
    s are Multinomial(s, p), topped up with total - s single draws of an item (uniform over
    the ``total`` items, so with probabilities p): Multinomial(s, p) + Multinomial(total - s, p)
    = Multinomial(total, p). A row whose Poisson sum overshoots ``total`` (probability about
    2%) is redrawn with NumPy's sampler, which keeps the result exact."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    p = counts / total
    slack = 2.0 * math.sqrt(total)
    # per row: NumPy ~70 ns a category; here ~10 ns a category plus ~10 ns a top-up draw,
    # and for a few dozen categories NumPy's sampler is as fast
    if counts.size < max(64, slack / 2):
        return rng.multinomial(total, p, size=size)
    draws = poisson_counts(rng, counts, (total - slack) / total, size)
    short = total - draws.sum(1)
    over = np.flatnonzero(short < 0)
    if over.size:
        draws[over] = rng.multinomial(total, p, size=over.size)
        short[over] = 0
    # the smallest integer type: the item -> category table is gathered at random
    item_category = np.repeat(np.arange(counts.size, dtype=np.min_scalar_type(counts.size)), counts)
    items = rng.integers(0, total, int(short.sum()))
    ends = np.cumsum(short)
    flat = draws.reshape(-1)
    for first in range(0, size, 64):                # 64 rows at a time: the indices stay in cache
        last = min(first + 64, size)
        picked = item_category[items[ends[first] - short[first]:ends[last - 1]]].astype(np.int64)
        picked += np.repeat(np.arange(first, last) * counts.size, short[first:last])
        np.add.at(flat, picked, 1)
    return draws


TABLE_BITS = 12             # a lookup slice per 1/4096 of the unit interval
MAX_TABLES = 128            # more distinct means: each is split into two parts
MAX_ALL_TABLES = 512        # more tables than this in all (~50 MB): NumPy's sampler
MAX_CDF_ENTRIES = 4_000_000  # CDF tables beyond this (huge means): NumPy's sampler


def poisson_counts(rng: np.random.Generator, counts: np.ndarray, unit: float, size: int,
                   chunk: int = 1 << 17) -> np.ndarray:
    """``size`` rows of independent Poisson(``unit * counts``) draws (int64), one column per
    integer count.

    NumPy's ``Generator.poisson`` spends 25-35 ns a draw. Here the means are multiples of one
    unit, so there are few distinct ones, and each gets a lookup table (:class:`PoissonTable`):
    a draw is one uniform and one table read. With more than ``MAX_TABLES`` distinct counts,
    each count is split as q * a + r (q about the square root of the largest), and the draw is
    Poisson(unit q a) + Poisson(unit r), each part from its own few tables: two reads a draw
    instead of hundreds of tables that would not stay in cache. Rows go about ``chunk`` draws
    at a time, so the temporaries stay in cache (and are not fresh pages each time)."""
    counts = np.asarray(counts, dtype=np.int64)
    out = np.zeros((size, counts.size), dtype=np.int64)
    if counts.size == 0:
        return out
    parts = [counts]
    if np.unique(counts).size > MAX_TABLES:
        q = math.isqrt(int(counts.max())) + 1
        parts = [counts - counts % q, counts % q]
    distinct = [np.unique(part, return_inverse=True) for part in parts]
    longest = [PoissonTable.window(unit * values.max())[1] for values, _ in distinct]
    if (sum(values.size for values, _ in distinct) > MAX_ALL_TABLES
            or any(values.size * length > MAX_CDF_ENTRIES for (values, _), length in zip(distinct, longest))):
        return rng.poisson(unit * counts, size=(size, counts.size))
    tables = [(PoissonTable(unit * values), column_value) for values, column_value in distinct]
    chunk = max(1, chunk // counts.size)           # rows a chunk
    part_draws = np.empty((min(chunk, size), counts.size), dtype=np.int64)
    for first in range(0, size, chunk):
        rows = out[first:first + chunk]
        # a row's uniforms are consecutive in the stream (parts side by side): chunking-free
        uniforms = rng.random((rows.shape[0], len(tables), counts.size))
        if len(tables) == 1:
            tables[0][0].invert(tables[0][1], uniforms[:, 0], rows)
            continue
        for part, (table, column_value) in enumerate(tables):
            rows += table.invert(column_value, uniforms[:, part], part_draws[:rows.shape[0]])
    return out


class PoissonTable:
    """Inversion sampling for a few Poisson means, by lookup.

    Per mean, its CDF over a window of counts outside which the probability is below 1e-25
    (mean +- 12 sd, plus 30 above), and per slice s of the unit interval (2**TABLE_BITS equal
    slices) the fewest and the most counts a uniform in s inverts to: ``first`` (at the
    slice's start) and ``last`` (just below its end), in window coordinates. ``table`` holds
    the count where the two agree (all but 0.3% of slices at a mean of 4, 1% at 40, 3% at 400),
    -1 where a CDF step cuts the slice; those uniforms are bisected between the two."""

    def __init__(self, means: np.ndarray):
        means = np.asarray(means, dtype=float)
        width = 2 ** TABLE_BITS
        self.start, stop = self.window(means)
        length = int((stop - self.start).max())
        count = self.start[:, None] + np.arange(length)
        # unnormalised pmf by its recurrence, p(m + 1) = p(m) mean / (m + 1), then normalised
        # so each CDF ends at exactly 1.0 (agrees with scipy's pdtr to ~1e-15)
        ratio = means[:, None] / (count + 1)
        ratio[count + 1 >= stop[:, None]] = 0.0
        weight = np.ones((means.size, length))
        weight[:, 1:] = ratio[:, :-1]
        np.cumprod(weight, axis=1, out=weight)
        self.cdf = np.cumsum(weight, axis=1)
        self.cdf /= self.cdf[:, -1:]
        # u <= F  <=>  u * width <= F * width, exact in binary: count the CDF values at or
        # below each slice's start (ceil) and below its end (floor) by slice, cumulatively
        scaled = self.cdf * width
        base = (np.arange(means.size) * (width + 1))[:, None]

        def at_or_below(slot):
            flat = (slot.astype(np.int64) + base).ravel()
            per_slot = np.bincount(flat, minlength=means.size * (width + 1))
            return per_slot.reshape(means.size, width + 1).cumsum(1)[:, :width]

        self.first = at_or_below(np.ceil(scaled))
        self.last = at_or_below(np.floor(scaled))
        self.table = np.where(self.first == self.last, self.start[:, None] + self.first, -1)

    @staticmethod
    def window(means):
        sd = np.sqrt(means)
        start = np.maximum(0, np.floor(means - 12 * sd - 30)).astype(np.int64)
        stop = np.ceil(means + 12 * sd + 30).astype(np.int64) + 1
        return start, stop

    def invert(self, column_mean: np.ndarray, u: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Counts for uniforms ``u`` (rows, columns) into ``out``; column c draws from mean
        ``column_mean[c]``: start + #{m : cdf[row, m] <= u}."""
        width = self.table.shape[1]
        cell = (u * width).astype(np.int32)             # int32: half the index traffic
        cell += (column_mean * width).astype(np.int32)
        np.take(self.table.reshape(-1), cell, out=out)
        cut = np.flatnonzero(out < 0)
        if cut.size:
            where = np.divmod(cut, u.shape[1])          # (row, column): u and out may be views
            cell = cell[where]
            row, value = cell // width, u[where]
            lo, hi = self.first.reshape(-1)[cell], self.last.reshape(-1)[cell]
            while np.any(lo < hi):                      # invariant: cdf[lo - 1] <= u < cdf[hi]
                mid = (lo + hi) // 2
                below = self.cdf[row, mid] <= value
                lo, hi = np.where(below, mid + 1, lo), np.where(below, hi, mid)
            out[where] = self.start[row] + lo
        return out

