"""The Bradley–Terry fit on the Elo scale (paper §3.3, Appendices B, C, I).

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
with chord steps from the point fit and damped Newton where those do not settle
(the resamples: :mod:`socialgym_benchmarks.ratings.bootstrap`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.optimize import minimize

SCALE = 400.0
BASE = 10.0
ANCHOR = 1000.0
C_DEFAULT = 0.1
LN_BASE = math.log(BASE)


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

