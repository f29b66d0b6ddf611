"""Profile-likelihood intervals (Firth-penalised) of Elo ratings and of contrasts between them.

Unlike a bootstrap, a profile interval does not collapse under separation (one competitor beat
another in every battle) and keeps its coverage with few episodes; the statistic is divided by
the episodes' :func:`design_effect`, since battles of one episode move together.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize
from scipy.stats import chi2
from scipy.stats import f as f_dist

from .battles import Battles, components, restrict
from .fit import ANCHOR, LN_BASE, SCALE

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
    ``socialgym_benchmarks.studies.interval_coverage``)."""
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


