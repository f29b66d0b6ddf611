"""Bradley–Terry ratings on the Elo scale, from episode logs (paper §3.3, Appendices B, C, I).

The model
---------
Each competitor ``i`` has a strength ``beta_i``; ``P(i beats j) = 1 / (1 + 10 ** -(beta_i - beta_j))``.
It is fit as in the paper's reference implementation (the FastChat / Chatbot Arena recipe):
an L2-regularised logistic regression without intercept on the aggregated pairwise outcomes,
one design row per battle with ``+ln 10`` in the winner's column and ``-ln 10`` in the loser's,
``C = 0.1``, i.e. it minimises::

    0.5 * ||beta||^2  +  C * sum_battles log(1 + exp(-ln10 * (beta_winner - beta_loser)))

Elo = ``400 * beta`` (equivalently ``400 * theta / ln 10`` for the natural-log-odds strength
``theta = ln10 * beta``), shifted so the mean is 1000. The penalty makes the optimum unique
(and its mean is already 0); ratings of competitors who never won or never lost stay finite.

Implementation: the battles are aggregated to win counts per ordered pair; the point fit is
``scipy.optimize.minimize(L-BFGS-B)`` on those counts with the analytic gradient; the bootstrap
fits all resamples at once (the problem is tiny per resample: one parameter per competitor),
with chord steps from the point fit and damped Newton where those do not settle. Resamples are
drawn exactly but cheaply: episodes (or battles) with identical contributions are grouped, so
one multinomial draw over the distinct contribution patterns is a full resample of all
episodes (:func:`multinomial_counts`; with many patterns, Poisson counts read from CDF lookup
tables, :func:`poisson_counts`, topped up to the exact multinomial).

Pairs (§3.3): within an episode, free-for-all games compare every cross-policy pair of seats
by the final outcome (reward by default, or score); two-team games compare only cross-team
seats; same-policy pairs are skipped. Same-value pairs (ties) follow ``ties``: ``exclude``
(default) leaves them out, as the paper's text says (Appendix B "Same-score pairs");
``split`` counts each as one win and one loss each way, as the paper's released BT code does
(it duplicates a tie into an a-wins and a b-wins row), so its published tables can be rebuilt.

Online Elo (:func:`online_elo`): the classical sequential update the released code also offers
(K = 32, every rating starting at 1000, one pass over the episodes in a shuffled order, ties
skipped there); path-dependent, so the order is a seeded shuffle and is part of the result.

Identification (:func:`components`): a BT fit pins the differences between competitors only
within a connected component of the battle graph; the L2 penalty centres each component on
its own, so differences across components are an artefact of the penalty, not of the data.
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.stats import chi2
from scipy.stats import f as f_dist

from socialgym_env.errors import SocialGymError
from socialgym_env.registry import game_class

SCALE = 400.0
BASE = 10.0
ANCHOR = 1000.0
C_DEFAULT = 0.1
N_BOOTSTRAP = 1000
LN_BASE = math.log(BASE)
TIES = ("exclude", "split")
ONLINE_K = 32.0            # the paper's released online Elo step


def check_ties(ties: str) -> str:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    return ties


# ----------------------------------------------------------------------------- pairs
def seat_values(record: dict, compare: str = "reward") -> Optional[dict]:
    """Per-seat value the pairs are compared on: the outcome reward (default) or the score.
    A game that declares ``rank_by="score"`` (Dead Last: a larger share beats a smaller one)
    is always compared on scores."""
    if record.get("failed") or not record.get("finished", True):
        return None
    if _ranks_by_score(record.get("game")):
        compare = "score"
    values = record.get("rewards") if compare == "reward" else record.get("scores")
    return values or None


@functools.lru_cache(maxsize=None)
def _ranks_by_score(game_id: Optional[str]) -> bool:
    try:
        return game_class(game_id).info.rank_by == "score"
    except SocialGymError:          # a game this install does not know: compare rewards
        return False


def is_team_record(record: dict) -> bool:
    """Two or more distinct non-empty teams in the roster: only cross-team pairs count."""
    teams = {seat.get("team") or "" for seat in record.get("roster", [])}
    teams.discard("")
    return len(teams) >= 2


def episode_pairs(record: dict, label: Optional[Callable[[dict], Optional[str]]] = None,
                  compare: str = "reward", ties: str = "exclude") -> list[tuple[str, str]]:
    """(winner label, loser label) for every counted pair of seats of one episode.

    ``label(seat) -> str | None`` names the competitor of a roster seat (default: its policy;
    role-conditioned ratings use ``"policy|side"``); a seat labelled None takes no part.
    Pairs of seats with the same policy are skipped; pairs with equal values are left out
    (``ties="exclude"``) or give one battle won by each (``ties="split"``).
    """
    split = check_ties(ties) == "split"
    values = seat_values(record, compare)
    if values is None:
        return []
    label = label or (lambda seat: seat.get("policy"))
    roster = [s for s in record.get("roster", []) if s.get("agent") in values]
    team_game = is_team_record(record)
    pairs = []
    for a in range(len(roster)):
        for b in range(a + 1, len(roster)):
            sa, sb = roster[a], roster[b]
            if sa.get("policy") == sb.get("policy"):
                continue
            if team_game and (sa.get("team") or "") == (sb.get("team") or ""):
                continue
            la, lb = label(sa), label(sb)
            if la is None or lb is None or la == lb:
                continue
            va, vb = float(values[sa["agent"]]), float(values[sb["agent"]])
            if va > vb:
                pairs.append((la, lb))
            elif vb > va:
                pairs.append((lb, la))
            elif split:
                pairs += [(la, lb), (lb, la)]
    return pairs


@dataclass
class Battles:
    """Pairwise outcomes grouped by episode: ``players`` names the competitors, ``winner`` /
    ``loser`` index them, ``episode`` says which episode (0..n_episodes-1) each came from.
    ``weight`` (optional, one per battle): how much each battle counts in :meth:`win_matrix`,
    the profile likelihood and the design effect (:func:`games_equal_battles`); the bootstrap
    (:func:`bootstrap_wins`) reads unweighted counts."""

    players: list
    winner: np.ndarray
    loser: np.ndarray
    episode: np.ndarray
    n_episodes: int
    weight: Optional[np.ndarray] = None

    @property
    def n(self) -> int:
        return int(self.winner.size)

    def cell_counts(self) -> np.ndarray:
        """Battles per (winner, loser) cell, flat: ``winner * k + loser`` (int64, k*k)."""
        k = len(self.players)
        return np.bincount(self.winner * k + self.loser, minlength=k * k)

    def win_matrix(self) -> np.ndarray:
        k = len(self.players)
        if self.weight is not None:
            return np.bincount(self.winner * k + self.loser, weights=self.weight, minlength=k * k).reshape(k, k)
        return self.cell_counts().reshape(k, k).astype(float)


def games_equal_battles(parts: Sequence[Battles]) -> Battles:
    """The battles of several games (same ``players``) as one weighted set in which every
    game counts equally: a game's battles get weight (all battles / games) / (its battles), so
    the weighted total is the pooled one; episodes are numbered on across games (a game's
    episodes stay its own clusters). Games without battles are left out."""
    parts = [b for b in parts if b.n]
    if not parts:
        raise ValueError("games_equal_battles needs at least one game with battles")
    mean = sum(b.n for b in parts) / len(parts)
    offsets = np.cumsum([0] + [b.n_episodes for b in parts[:-1]])
    return Battles(list(parts[0].players), np.concatenate([b.winner for b in parts]),
                   np.concatenate([b.loser for b in parts]),
                   np.concatenate([b.episode + o for b, o in zip(parts, offsets)]),
                   int(sum(b.n_episodes for b in parts)),
                   np.concatenate([np.full(b.n, mean / b.n) for b in parts]))


def collect_battles(records: Iterable[dict], label=None, compare: str = "reward",
                    players: Optional[Sequence[str]] = None, ties: str = "exclude") -> Battles:
    """The battles of many episodes; ``players`` fixes the competitor order (others are added
    in sorted order). A record may carry its own labelling function as ``_label`` (pooled
    role-conditioned fits over games with different sides)."""
    per_episode = []
    names = set(players or ())
    for record in records:
        pairs = episode_pairs(record, record.get("_label", label), compare, ties)
        per_episode.append(pairs)
        for w, l in pairs:
            names.update((w, l))
    order = list(players or ()) + sorted(names - set(players or ()))
    index = {p: i for i, p in enumerate(order)}
    win, lose, ep = [], [], []
    for e, pairs in enumerate(per_episode):
        for w, l in pairs:
            win.append(index[w])
            lose.append(index[l])
            ep.append(e)
    return Battles(order, np.asarray(win, dtype=np.int64), np.asarray(lose, dtype=np.int64),
                   np.asarray(ep, dtype=np.int64), len(per_episode))


# ----------------------------------------------------------------------------- fit
def _pair_arrays(wins: np.ndarray):
    """Unordered pairs (i < j) with any battles, and their win counts both ways."""
    k = wins.shape[-1]
    i, j = np.triu_indices(k, 1)
    return i, j


def bt_objective(beta: np.ndarray, wins: np.ndarray, C: float = C_DEFAULT):
    """Objective and gradient of the regularised BT fit for one win-count matrix."""
    i, j = _pair_arrays(wins)
    w_ij, w_ji = wins[i, j], wins[j, i]
    d = LN_BASE * (beta[i] - beta[j])
    # log(1 + exp(-d)) and log(1 + exp(d)), stably
    loss = w_ij * np.logaddexp(0.0, -d) + w_ji * np.logaddexp(0.0, d)
    p = 0.5 * (1.0 + np.tanh(0.5 * d))          # sigmoid(d)
    g = (w_ij + w_ji) * p - w_ij                # d loss / d d
    k = beta.size
    grad = beta + C * LN_BASE * (np.bincount(i, g, minlength=k) - np.bincount(j, g, minlength=k))
    return 0.5 * beta @ beta + C * loss.sum(), grad


def to_elo(beta: np.ndarray) -> np.ndarray:
    elo = SCALE * np.asarray(beta, dtype=float)
    return elo - elo.mean(axis=-1, keepdims=True) + ANCHOR


def fit_bt(wins: np.ndarray, C: float = C_DEFAULT) -> np.ndarray:
    """Elo ratings (mean 1000) from a win-count matrix ``wins[i, j]`` = times i beat j.
    L-BFGS on the aggregated counts with the analytic gradient."""
    wins = np.asarray(wins, dtype=float)
    k = wins.shape[0]
    if k == 0:
        return np.zeros(0)
    result = minimize(bt_objective, np.zeros(k), args=(wins, C), jac=True, method="L-BFGS-B",
                      options={"maxiter": 10_000, "gtol": 1e-10, "ftol": 1e-15})
    return to_elo(result.x)


def fit_bt_batch(wins: np.ndarray, C: float = C_DEFAULT, iters: int = 100, tol: float = 1e-3,
                 start: Optional[np.ndarray] = None, chord_iters: int = 50) -> np.ndarray:
    """Elo ratings for a batch of win-count matrices ``wins[b, i, j]`` at once. The objective
    is strictly convex, so this is the optimum of :func:`fit_bt`; a matrix is done when its
    next step would move no rating by more than ``tol`` Elo.

    ``start``: Elo ratings to start from (bootstrap resamples start at the point fit). From
    there the matrices first take chord steps (:func:`_chord_steps`), and only those that
    these do not settle go on with Newton steps (:func:`_newton_steps`), as do all matrices
    without ``start``."""
    wins = np.asarray(wins)
    B, k, _ = wins.shape
    if k == 0:
        return np.zeros((B, 0))
    i, j = np.triu_indices(k, 1)
    pairs = _Pairs(k, i, j, wins[:, i, j], wins[:, j, i], C, tol / SCALE)
    beta = np.zeros((B, k))
    converged = np.zeros(B, dtype=bool)
    if start is not None:
        beta += (np.asarray(start, dtype=float) - ANCHOR) / SCALE
        beta = _chord_steps(pairs, beta, chord_iters, converged)
    rest = np.flatnonzero(~converged)
    if rest.size:
        beta[rest] = _newton_steps(pairs, rest, beta[rest], iters)
    return to_elo(beta)


@dataclass
class _Pairs:
    """A batch of win-count matrices as per-pair counts: ``w_ij[b, p]`` = wins of ``i[p]``
    over ``j[p]`` (pairs i < j), ``w_ji`` the other way; ``step_tol`` in beta units."""

    k: int
    i: np.ndarray
    j: np.ndarray
    w_ij: np.ndarray
    w_ji: np.ndarray
    C: float
    step_tol: float

    @functools.cached_property
    def incidence(self) -> np.ndarray:
        """pair -> (+1 at i, -1 at j)"""
        out = np.zeros((self.i.size, self.k))
        out[np.arange(self.i.size), self.i] = 1
        out[np.arange(self.i.size), self.j] = -1
        return out

    def curvature(self, beta: np.ndarray, n: np.ndarray):
        """sigmoid of each pair's Elo gap, and the pair's weight in the Hessian."""
        p = 0.5 * (1.0 + np.tanh(0.5 * LN_BASE * (beta[:, self.i] - beta[:, self.j])))
        return p, self.C * LN_BASE ** 2 * n * p * (1.0 - p)

    def hessian(self, h: np.ndarray) -> np.ndarray:
        """sum over pairs of h_p * (e_i - e_j)(e_i - e_j)^T, plus the identity of the L2 term:
        the pair weights on the diagonal, minus them off it (scattered, O(B k^2) instead of
        the O(B k^4) product with every pair's outer product)."""
        k, i, j = self.k, self.i, self.j
        hess = np.zeros((h.shape[0], k * k))
        hess[:, i * k + j] = -h
        hess[:, j * k + i] = -h
        hess[:, ::k + 1] = h @ np.abs(self.incidence) + 1.0
        return hess.reshape(-1, k, k)


def _chord_steps(pairs: _Pairs, beta: np.ndarray, iters: int, converged: np.ndarray,
                 block: int = 128) -> np.ndarray:
    """Chord iteration from a common start ``beta`` (the point fit): Newton steps with one
    Hessian, the start point's for the mean win counts, inverted once for the whole batch, so
    a step is two matrix products and no per-matrix solve (those solves were most of the
    time). It converges linearly, the faster the closer a matrix's Hessian is to that one
    (3-5 steps with hundreds of outcomes per pair, about 12 with a handful). It runs in
    float32, whose rounding moves a rating by about 1e-4 Elo, under the usual ``tol``. A
    matrix leaves when its step is within tol (marked in ``converged``) or when a step does
    not shrink its gradient (left for Newton). Matrices go ``block`` at a time, so the
    per-pair temporaries stay in cache. Returns the new ``beta`` (float64)."""
    f32 = np.float32
    n = pairs.w_ij + pairs.w_ji
    chord = np.linalg.inv(pairs.hessian(pairs.curvature(beta[:1], n.mean(0))[1])[0]).astype(f32)
    incidence = pairs.incidence.astype(f32)
    half_gap = np.ascontiguousarray(incidence.T) * f32(0.5 * LN_BASE)     # beta -> half the log-odds gap
    # C ln10 (n sigmoid(gap) - w_ij) = c/2 (n tanh(gap / 2) + n - 2 w_ij), c = C ln10
    half_c = f32(0.5 * pairs.C * LN_BASE)

    def gradient(b, slope, offset):
        t = np.tanh(b @ half_gap)
        t *= slope
        t += offset
        return b + t @ incidence

    b = beta.astype(f32)
    for first in range(0, b.shape[0], block):
        rows = np.arange(first, min(first + block, b.shape[0]))   # the block's matrices still stepping
        slope = n[rows].astype(f32)
        offset = slope - 2 * pairs.w_ij[rows].astype(f32)
        slope *= half_c
        offset *= half_c
        b_rows = b[rows]
        grad = gradient(b_rows, slope, offset)
        norm = (grad ** 2).sum(1)
        for _ in range(iters):
            step = grad @ chord
            new = b_rows - step
            new_grad = gradient(new, slope, offset)
            new_norm = (new_grad ** 2).sum(1)
            better = new_norm < norm               # the others leave for Newton
            b[rows[better]] = new[better]
            within = better & (np.abs(step).max(1) <= pairs.step_tol)
            converged[rows[within]] = True
            going = better & ~within
            if going.all():
                b_rows, grad, norm = new, new_grad, new_norm
                continue
            if not going.any():
                break
            rows, b_rows, grad, norm = rows[going], new[going], new_grad[going], new_norm[going]
            slope, offset = slope[going], offset[going]
    return b.astype(np.float64)


def _newton_steps(pairs: _Pairs, rows: np.ndarray, beta: np.ndarray, iters: int) -> np.ndarray:
    """Damped Newton for the matrices ``rows`` from ``beta``, in float64. Steps are damped on
    the gradient norm, not the objective: along a Newton step the squared gradient norm
    falls at rate 2|g|^2 for small steps, so halving until it falls is a valid line search,
    and it reuses the gradient the next iteration needs."""
    w_ij = pairs.w_ij[rows].astype(float)
    n = w_ij + pairs.w_ji[rows]
    incidence = pairs.incidence

    def gradient(b, sub):
        p, h = pairs.curvature(b, n[sub])
        return b + pairs.C * LN_BASE * ((n[sub] * p - w_ij[sub]) @ incidence), h

    everyone = np.arange(rows.size)
    grad, h = gradient(beta, everyone)
    norm = (grad ** 2).sum(1)
    converged = np.zeros(rows.size, dtype=bool)
    for _ in range(iters):
        active = np.flatnonzero(~converged)
        if active.size == 0:
            break
        step = np.linalg.solve(pairs.hessian(h[active]), grad[active][..., None])[..., 0]
        small = np.abs(step).max(1) <= pairs.step_tol     # the optimum within tol: take it as is
        beta[active[small]] -= step[small]
        converged[active[small]] = True
        active, step = active[~small], step[~small]
        t = np.ones(active.size)
        todo = np.arange(active.size)              # rows (of ``active``) still to accept a step
        for _ in range(30):
            sub = active[todo]
            new = beta[sub] - t[todo, None] * step[todo]
            new_grad, new_h = gradient(new, sub)
            new_norm = (new_grad ** 2).sum(1)
            better = new_norm < norm[sub]
            done = todo[better]
            beta[active[done]], grad[active[done]], h[active[done]], norm[active[done]] = (
                new[better], new_grad[better], new_h[better], new_norm[better])
            todo = todo[~better]
            if todo.size == 0:
                break
            t[todo] *= 0.5
        converged[active[todo]] = True             # no descent left at rounding level: optimum
    return beta


# ----------------------------------------------------------------------------- bootstrap
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


# ----------------------------------------------------------------------------- profile-likelihood intervals
PROFILE_RIDGE = 1e-9        # fixes the free shift; keeps separated strengths finite (negligible otherwise)
PROFILE_REACH = 12_800.0    # Elo from the MLE beyond which a bound is reported unbounded
PROFILE_TOL = 0.5           # Elo: how closely a bound is located


class _FirthLikelihood:
    """Minus the BT log-likelihood (log base e) with Firth's penalty, and its gradient, for one
    win-count matrix (the pairs that met precomputed: it is evaluated thousands of times).

    Firth: + 0.5 log det of the Fisher information of the identified differences (the
    Jeffreys prior); it keeps the estimate finite under separation and corrects the small-
    sample bias, and profile intervals of it keep their coverage with few outcomes
    (Heinze & Schemper 2002). A vanishing ridge fixes the common shift, which nothing sees."""

    def __init__(self, wins: np.ndarray):
        k = wins.shape[0]
        i, j = np.triu_indices(k, 1)
        n = wins[i, j] + wins[j, i]
        met = n > 0
        self.k, self.i, self.j, self.n = k, i[met], j[met], n[met]
        self.w_ij = wins[self.i, self.j]
        basis = np.linalg.svd(np.ones((1, k)))[2][1:].T       # the sum-zero (identified) directions
        self.rows = LN_BASE * (basis[self.i] - basis[self.j])   # a pair's row in that space

    def __call__(self, beta: np.ndarray):
        i, j, n = self.i, self.j, self.n
        d = LN_BASE * (beta[i] - beta[j])
        p = 0.5 * (1.0 + np.tanh(0.5 * d))
        f = (self.w_ij * np.logaddexp(0.0, -d) + (n - self.w_ij) * np.logaddexp(0.0, d)).sum()
        dd = LN_BASE * (n * p - self.w_ij)                       # d f / d(beta_i - beta_j)
        weight = n * p * (1 - p)
        fisher = (self.rows * weight[:, None]).T @ self.rows
        sign, logdet = np.linalg.slogdet(fisher)
        if sign > 0:
            leverage = np.einsum("pa,ab,pb->p", self.rows, np.linalg.inv(fisher), self.rows) * weight
            f -= 0.5 * logdet
            dd -= 0.5 * leverage * (1 - 2 * p) * LN_BASE
        grad = np.bincount(i, dd, minlength=self.k) - np.bincount(j, dd, minlength=self.k)
        return f + 0.5 * PROFILE_RIDGE * beta @ beta, grad + PROFILE_RIDGE * beta


def _argmin(fun, x0):
    return minimize(fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": 5_000, "gtol": 1e-9})


def design_effect(battles: Battles, contrast: np.ndarray) -> float:
    """How much the episodes' clustering inflates the variance of ``contrast @ beta``: the
    episode-clustered (sandwich) variance over the model's, never below 1. Battles of one
    episode are not independent (a free-for-all winner beats every other seat at once; a
    team's seats win or lose together); the likelihood treats them as if they were.

    Taken at equal strengths (every battle's residual is +-1/2), so it measures how the
    battles of an episode move together, not how well a fit predicts them: at a fitted point,
    near-separated pairs have residuals near 0 and the sandwich loses the clustering (six
    battles that move as one read as 1.3 battles). A one-battle episode counts exactly once;
    m battles that always move together count m times.

    Weighted battles (``battles.weight``): the weighted likelihood's curvature is not the
    variance of its score, even for independent battles; the effect is then the sandwich of
    the weighted score over the weighted information, never below what independent weighted
    battles give (which is 1 without weights)."""
    k = len(battles.players)
    if battles.n == 0:
        return 1.0
    w, l = battles.winner, battles.loser
    weight = np.ones(battles.n) if battles.weight is None else np.asarray(battles.weight, dtype=float)
    score = np.zeros((battles.n_episodes, k))
    np.add.at(score, (battles.episode, w), 0.5 * LN_BASE * weight)
    np.add.at(score, (battles.episode, l), -0.5 * LN_BASE * weight)
    meat = score.T @ score
    inverse = np.linalg.pinv(_pair_information(w, l, 0.25 * LN_BASE ** 2 * weight, k))
    model = contrast @ inverse @ contrast
    if model <= 0:
        return 1.0
    floor = 1.0
    if battles.weight is not None:
        independent = _pair_information(w, l, 0.25 * LN_BASE ** 2 * weight ** 2, k)
        floor = float(contrast @ inverse @ independent @ inverse @ contrast / model)
    return max(floor, float(contrast @ inverse @ meat @ inverse @ contrast / model))


def _pair_information(w: np.ndarray, l: np.ndarray, weight: np.ndarray, k: int) -> np.ndarray:
    """sum over battles of weight * (e_w - e_l)(e_w - e_l)^T."""
    fisher = np.zeros((k, k))
    np.add.at(fisher, (w, w), weight)
    np.add.at(fisher, (l, l), weight)
    np.add.at(fisher, (w, l), -weight)
    np.add.at(fisher, (l, w), -weight)
    return fisher


def profile_interval(battles: Battles, contrast: np.ndarray, beta_hat: np.ndarray,
                     level: float = 0.95) -> tuple[float, float]:
    from threadpoolctl import threadpool_limits
    # thousands of tiny (k x k) solves: BLAS threads only contend (10x slower on a busy host)
    with threadpool_limits(1):
        return _profile_interval(battles, contrast, beta_hat, level)


def _profile_quantile(battles: Battles, level: float) -> float:
    """The reference quantile of the profile statistic: chi2_1; for weighted battles F(1, G - 1)
    over the G episodes that made battles, the small-sample reference of a cluster-sandwich
    statistic: a weighted likelihood's scale comes only from the sandwich, and with few
    episodes chi2_1 fell short (games-equal coverage 91.2% at 12 episodes, 95.9% with F;
    ``socialgym_benchmarks.interval_coverage``)."""
    if battles.weight is None:
        return float(chi2.ppf(level, 1))
    clusters = np.unique(battles.episode).size
    return float(f_dist.ppf(level, 1, clusters - 1)) if clusters > 1 else math.inf


class _ContrastProfile:
    """The profile likelihood of ``contrast @ beta`` for one set of battles: the unconstrained
    Firth fit (``beta_hat``, log10 units, is where its search starts) and :meth:`excess`, the
    likelihood-ratio statistic at a value minus the cutoff (:func:`_profile_quantile`) times the episodes'
    :func:`design_effect` (negative inside the interval)."""

    def __init__(self, battles: Battles, contrast: np.ndarray, beta_hat: np.ndarray, level: float):
        contrast = np.asarray(contrast, dtype=float)
        self.cutoff = _profile_quantile(battles, level) * design_effect(battles, contrast)
        self.direction = contrast / (contrast @ contrast)
        # orthonormal basis of the directions that keep the contrast fixed
        self.null = np.linalg.svd(contrast[None, :])[2][1:].T
        self.neg_loglik = _FirthLikelihood(battles.win_matrix())
        fit = _argmin(self.neg_loglik, beta_hat)
        self.mle, self.best = fit.x, fit.fun
        self.t_hat = float(contrast @ self.mle)
        self.restart()

    def restart(self) -> None:
        self.start = self.null.T @ self.mle

    def excess(self, t_elo: float) -> float:
        """2 (best log-lik - profile log-lik at t) - cutoff: negative inside the interval."""
        base = self.direction * (t_elo / SCALE)

        def fun(u):
            f, g = self.neg_loglik(base + self.null @ u)
            return f, self.null.T @ g
        result = _argmin(fun, self.start)
        self.start = result.x
        return 2.0 * (result.fun - self.best) - self.cutoff


def _profile_interval(battles: Battles, contrast: np.ndarray, beta_hat: np.ndarray,
                      level: float) -> tuple[float, float]:
    """Profile-likelihood interval for ``contrast @ beta`` in Elo (x400): the values t whose
    best likelihood under ``contrast @ beta = t`` is within chi2_1(level)/2 of the maximum,
    the statistic divided by the episodes' :func:`design_effect` (``beta_hat``, the point fit
    in log10 units, is where the search starts). Unlike a bootstrap, it does not collapse
    under separation: when one competitor beat another in every battle, the interval stays
    wide on the open side, and both ends come from the likelihood, not from the L2 penalty.
    A bound farther than PROFILE_REACH from the maximum is infinite."""
    profile = _ContrastProfile(battles, contrast, beta_hat, level)
    t_hat, excess = profile.t_hat, profile.excess
    bounds = []
    for sign in (-1.0, 1.0):
        profile.restart()
        inside, step = 0.0, 50.0
        bound = sign * math.inf
        while step <= PROFILE_REACH:
            if excess(SCALE * t_hat + sign * step) > 0:
                # bisection on the bracket the scan found, not brentq: a profile point solved
                # again from another start can differ in the last digits, and brentq then
                # refuses a bracket whose ends no longer differ in sign
                while step - inside > PROFILE_TOL:
                    middle = 0.5 * (inside + step)
                    if excess(SCALE * t_hat + sign * middle) > 0:
                        step = middle
                    else:
                        inside = middle
                bound = SCALE * t_hat + sign * 0.5 * (inside + step)
                break
            inside, step = step, 2 * step
        bounds.append(bound)
    return bounds[0], bounds[1]


def restrict(battles: Battles, keep: np.ndarray) -> Battles:
    """The battles among the competitors ``keep`` (sorted indices), re-indexed; episodes keep
    their numbers (and count), so the episode clustering is unchanged."""
    keep = np.asarray(keep, dtype=np.int64)
    mask = np.isin(battles.winner, keep) & np.isin(battles.loser, keep)
    return Battles([battles.players[i] for i in keep], np.searchsorted(keep, battles.winner[mask]),
                   np.searchsorted(keep, battles.loser[mask]), battles.episode[mask], battles.n_episodes,
                   None if battles.weight is None else battles.weight[mask])


def estimable(battles: Battles, contrast: np.ndarray) -> bool:
    """Whether the data pin ``contrast @ beta``: the contrast lies in the row space of the
    design matrix (one row per distinct pair that met, +1 at one side, -1 at the other),
    i.e. appending it leaves the rank unchanged."""
    k = len(battles.players)
    pairs = np.unique(np.stack([np.minimum(battles.winner, battles.loser),
                                np.maximum(battles.winner, battles.loser)], 1), axis=0) if battles.n else np.zeros((0, 2), int)
    design = np.zeros((len(pairs), k))
    design[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    design[np.arange(len(pairs)), pairs[:, 1]] = -1.0
    rank = np.linalg.matrix_rank(design) if len(pairs) else 0
    return bool(np.linalg.matrix_rank(np.vstack([design, np.asarray(contrast, dtype=float)[None, :]])) == rank)


def _component_problem(battles: Battles, contrast: np.ndarray, elo: np.ndarray):
    """(battles, contrast, beta_hat) restricted to the connected component of the battle graph
    that holds the contrast (other components carry no information about it), or None when
    the data do not pin the contrast (:func:`estimable`)."""
    contrast = np.asarray(contrast, dtype=float)
    if not battles.n or not estimable(battles, contrast):
        return None
    component = components(battles)
    labels = np.array([component[p] for p in battles.players])
    keep = np.flatnonzero(labels == labels[np.flatnonzero(contrast)[0]])
    beta_hat = (np.asarray(elo, dtype=float)[keep] - ANCHOR) / SCALE
    return restrict(battles, keep), contrast[keep], beta_hat


def contrast_interval(battles: Battles, contrast: np.ndarray, elo: np.ndarray,
                      level: float = 0.95) -> tuple[float, float]:
    """Profile-likelihood interval (Elo) of ``contrast @ elo``, a sum-zero contrast of the
    competitors: (-inf, inf) when the data do not pin it (:func:`estimable`); else fitted on
    the connected component of the battle graph that holds the contrast. ``elo``: the point
    fit, where the design effect is taken."""
    problem = _component_problem(battles, contrast, elo)
    if problem is None:
        return -math.inf, math.inf
    return profile_interval(*problem, level)


def contrast_excludes(battles: Battles, contrast: np.ndarray, elo: np.ndarray, value: float = 0.0,
                      level: float = 0.95) -> bool:
    """Whether :func:`contrast_interval` would leave out ``value`` (Elo), from one profile
    point instead of the interval's search (a few ms instead of ~40 ms: adaptive tournaments
    ask it for every adjacent pair at every look)."""
    problem = _component_problem(battles, contrast, elo)
    if problem is None:
        return False
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1):
        return bool(_ContrastProfile(*problem, level).excess(value) > 0)


def profile_elo_intervals(battles: Battles, elo: np.ndarray, level: float = 0.95):
    """Per competitor, the profile-likelihood interval of its Elo (the mean of the competitors
    that played taken as 1000, as the point fit has it). Competitors without battles, and all
    of them when the battle graph is not connected (their levels are then not identified),
    get (-inf, inf)."""
    k = len(battles.players)
    lo, hi = np.full(k, -math.inf), np.full(k, math.inf)
    wins = battles.win_matrix()
    active = np.flatnonzero(wins.sum(0) + wins.sum(1) > 0)
    for i in active:
        contrast = np.zeros(k)
        contrast[active] = -1.0 / active.size
        contrast[i] += 1.0
        a, b = contrast_interval(battles, contrast, elo, level)
        lo[i], hi[i] = a + ANCHOR, b + ANCHOR
    return lo, hi


# ----------------------------------------------------------------------------- online Elo, identification
def online_elo(battles: Battles, k: float = ONLINE_K, seed: int = 0) -> dict:
    """The sequential Elo update over the battles, episode by episode in a seeded shuffled
    order (one pass; an episode's battles in their order): for a battle won by ``w`` against
    ``l``, ``E = 1 / (1 + 10 ** ((R_l - R_w) / 400))``, ``R_w += k (1 - E)``, ``R_l -= k (1 - E)``.
    Every rating starts at 1000 (so the mean stays 1000); a split tie is a battle each way.
    Returns {competitor: Elo} for the competitors that played."""
    ratings = np.full(len(battles.players), ANCHOR)
    by_episode = defaultdict(list)
    for w, l, e in zip(battles.winner.tolist(), battles.loser.tolist(), battles.episode.tolist()):
        by_episode[e].append((w, l))
    for e in np.random.default_rng(seed).permutation(battles.n_episodes).tolist():
        for w, l in by_episode.get(e, ()):
            gain = k * (1.0 - 1.0 / (1.0 + BASE ** ((ratings[l] - ratings[w]) / SCALE)))
            ratings[w] += gain
            ratings[l] -= gain
    wins = battles.win_matrix()
    played = wins.sum(0) + wins.sum(1)
    return {p: float(ratings[i]) for i, p in enumerate(battles.players) if played[i] > 0}


def components(battles: Battles, among: Optional[Sequence[int]] = None) -> dict:
    """{competitor: component index} of the graph whose edges are the pairs that met; rating
    differences are identified only within a component. ``among``: only these competitors
    (indices; default all)."""
    parent = list(range(len(battles.players)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for w, l in zip(battles.winner.tolist(), battles.loser.tolist()):
        parent[root(w)] = root(l)
    labels: dict = {}
    keep = range(len(battles.players)) if among is None else among
    return {battles.players[i]: labels.setdefault(root(i), len(labels)) for i in keep}


# ----------------------------------------------------------------------------- win rates
def wilson_interval(successes: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (0/0 gives (0, 1))."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def seat_win_counts(records: Iterable[dict], label=None) -> dict:
    """Per competitor: seats played, strict wins (reward > 0), draws, losses."""
    label = label or (lambda seat: seat.get("policy"))
    counts = defaultdict(lambda: {"seats": 0, "wins": 0, "draws": 0, "losses": 0})
    for record in records:
        rewards = seat_values(record, "reward")
        if rewards is None:
            continue
        for seat in record.get("roster", []):
            name = label(seat)
            if name is None or seat.get("agent") not in rewards:
                continue
            r = float(rewards[seat["agent"]])
            c = counts[name]
            c["seats"] += 1
            c["wins" if r > 0 else "losses" if r < 0 else "draws"] += 1
    return dict(counts)


def win_rates(records: Iterable[dict], label=None) -> dict:
    """Strict win rate per competitor (ties count in the denominator) with a Wilson 95% CI."""
    out = {}
    for name, c in seat_win_counts(records, label).items():
        lo, hi = wilson_interval(c["wins"], c["seats"])
        out[name] = dict(c, rate=c["wins"] / c["seats"] if c["seats"] else 0.0, lo=lo, hi=hi)
    return out

