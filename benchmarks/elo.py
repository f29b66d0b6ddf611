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
fits all resamples at once with a batched damped Newton method (the problem is tiny per
resample: one parameter per competitor). Resamples are drawn exactly but cheaply: episodes
(or battles) with identical contributions are grouped, so one multinomial draw over the distinct
contribution patterns is a full resample of all episodes.

Pairs (§3.3): within an episode, free-for-all games compare every cross-policy pair of seats
by the final outcome (reward by default, or score); two-team games compare only cross-team
seats; same-value pairs are left out (Appendix B "Same-score pairs"); same-policy pairs are
skipped.
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from scipy.optimize import minimize

from socialgym_env.errors import SocialGymError
from socialgym_env.registry import game_class

SCALE = 400.0
BASE = 10.0
ANCHOR = 1000.0
C_DEFAULT = 0.1
N_BOOTSTRAP = 1000
LN_BASE = math.log(BASE)


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
                  compare: str = "reward") -> list[tuple[str, str]]:
    """(winner label, loser label) for every counted pair of seats of one episode.

    ``label(seat) -> str | None`` names the competitor of a roster seat (default: its policy;
    role-conditioned ratings use ``"policy|side"``); a seat labelled None takes no part.
    Pairs of seats with the same policy are skipped, as are pairs with equal values.
    """
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
    return pairs


@dataclass
class Battles:
    """Pairwise outcomes grouped by episode: ``players`` names the competitors, ``winner`` /
    ``loser`` index them, ``episode`` says which episode (0..n_episodes-1) each came from."""

    players: list
    winner: np.ndarray
    loser: np.ndarray
    episode: np.ndarray
    n_episodes: int

    @property
    def n(self) -> int:
        return int(self.winner.size)

    def win_matrix(self) -> np.ndarray:
        k = len(self.players)
        return np.bincount(self.winner * k + self.loser, minlength=k * k).reshape(k, k).astype(float)


def collect_battles(records: Iterable[dict], label=None, compare: str = "reward",
                    players: Optional[Sequence[str]] = None) -> Battles:
    """The battles of many episodes; ``players`` fixes the competitor order (others are added
    in sorted order)."""
    per_episode = []
    names = set(players or ())
    for record in records:
        pairs = episode_pairs(record, label, compare)
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


def fit_bt_batch(wins: np.ndarray, C: float = C_DEFAULT, iters: int = 100, tol: float = 1e-10,
                 start: Optional[np.ndarray] = None) -> np.ndarray:
    """Elo ratings for a batch of win-count matrices ``wins[b, i, j]`` at once (damped Newton;
    the objective is strictly convex, so this is the same optimum as :func:`fit_bt`).
    ``start``: Elo ratings to start from (bootstrap resamples start at the point fit, which
    saves Newton steps but not accuracy: the stopping rule is the same).

    Steps are damped on the gradient norm, not the objective: along a Newton step the squared
    gradient norm falls at rate 2|g|^2 for small steps, so halving until it falls is a valid line
    search, and it reuses the gradient the next iteration needs (no objective evaluations)."""
    wins = np.asarray(wins, dtype=float)
    B, k, _ = wins.shape
    if k == 0:
        return np.zeros((B, 0))
    i, j = np.triu_indices(k, 1)
    w_ij, w_ji = wins[:, i, j], wins[:, j, i]
    n = w_ij + w_ji
    beta = np.zeros((B, k))
    if start is not None:
        beta += (np.asarray(start, dtype=float) - ANCHOR) / SCALE
    incidence = np.zeros((i.size, k))              # pair -> (+1 at i, -1 at j)
    incidence[np.arange(i.size), i] = 1.0
    incidence[np.arange(i.size), j] = -1.0
    touches = np.abs(incidence)                    # pair -> 1 at i and at j
    upper, lower = i * k + j, j * k + i            # flat (i, j) and (j, i) cells of a k x k matrix
    diagonal = np.arange(k) * (k + 1)

    def gradient(b, rows):
        """Gradient and per-pair curvature of the objective at ``b`` (resamples ``rows``)."""
        p = 0.5 * (1.0 + np.tanh(0.5 * LN_BASE * (b[:, i] - b[:, j])))   # sigmoid of the Elo gap
        grad = b + C * LN_BASE * ((n[rows] * p - w_ij[rows]) @ incidence)
        return grad, C * LN_BASE ** 2 * n[rows] * p * (1.0 - p)

    def hessian(h):
        """sum over pairs of h_p * (e_i - e_j)(e_i - e_j)^T, plus the identity of the L2 term:
        the pair weights on the diagonal, minus them off it (scattered, O(B k^2) instead of
        the O(B k^4) product with every pair's outer product)."""
        hess = np.zeros((h.shape[0], k * k))
        hess[:, upper] = -h
        hess[:, lower] = -h
        hess[:, diagonal] = h @ touches + 1.0
        return hess.reshape(-1, k, k)

    everyone = np.arange(B)
    grad, h = gradient(beta, everyone)
    scale = tol * np.maximum(1.0, C * n.sum(1))
    for _ in range(iters):
        active = np.flatnonzero(np.abs(grad).max(1) > scale)
        if active.size == 0:
            break
        step = np.linalg.solve(hessian(h[active]), grad[active][..., None])[..., 0]
        norm = (grad[active] ** 2).sum(1)
        t = np.ones(active.size)
        todo = np.arange(active.size)              # rows (of ``active``) still to accept a step
        for _ in range(30):
            rows = active[todo]
            new = beta[rows] - t[todo, None] * step[todo]
            new_grad, new_h = gradient(new, rows)
            better = (new_grad ** 2).sum(1) < norm[todo]
            done = todo[better]
            beta[active[done]], grad[active[done]], h[active[done]] = new[better], new_grad[better], new_h[better]
            todo = todo[~better]
            if todo.size == 0:
                break
            t[todo] *= 0.5
    return to_elo(beta)


# ----------------------------------------------------------------------------- bootstrap
def _group_rows(matrix: np.ndarray):
    """Distinct rows of an integer matrix and how many times each occurs."""
    if matrix.shape[0] == 0:
        return matrix, np.zeros(0, dtype=np.int64)
    unique, counts = np.unique(matrix, axis=0, return_counts=True)
    return unique, counts


def episode_cell_counts(battles: Battles) -> np.ndarray:
    """(n_episodes, k*k) matrix: what each episode adds to each win-count cell."""
    k = len(battles.players)
    cells = battles.winner * k + battles.loser
    out = np.zeros((battles.n_episodes, k * k), dtype=np.int64)
    np.add.at(out, (battles.episode, cells), 1)
    return out


def bootstrap_wins(battles: Battles, n_boot: int = N_BOOTSTRAP, by: str = "episode",
                   seed: int = 0) -> np.ndarray:
    """(n_boot, k, k) resampled win-count matrices. ``by="episode"`` resamples whole episodes
    with replacement (default: pairs from one episode move together); ``by="battle"`` is the
    paper's multinomial bootstrap on the battle counts."""
    k = len(battles.players)
    rng = np.random.default_rng(seed)
    if by == "episode":
        patterns, counts = _group_rows(episode_cell_counts(battles))
        total = int(counts.sum())
    elif by == "battle":
        cells = np.bincount(battles.winner * k + battles.loser, minlength=k * k)
        nz = np.flatnonzero(cells)
        patterns = np.zeros((nz.size, k * k), dtype=np.int64)
        patterns[np.arange(nz.size), nz] = 1
        counts, total = cells[nz], int(cells.sum())
    else:
        raise ValueError(f"bootstrap by must be 'episode' or 'battle', got {by!r}")
    if total == 0:
        return np.zeros((n_boot, k, k))
    draws = rng.multinomial(total, counts / total, size=n_boot)      # (n_boot, patterns)
    return _sum_patterns(draws, patterns).reshape(n_boot, k, k)


def _sum_patterns(draws: np.ndarray, patterns: np.ndarray) -> np.ndarray:
    """``draws @ patterns`` as floats, without an integer matrix product (NumPy has no BLAS
    for integers: that product was almost all of a 50-competitor bootstrap). Battle
    resampling and one-battle episodes give one-hot patterns (distinct rows, so distinct
    cells): the product is then a scatter of the draws into their cells. Other patterns go
    through a float64 product, exact while every sum stays below 2**53."""
    nonzero = patterns != 0
    if nonzero.sum(1).max(initial=0) == 1 and (patterns[nonzero] == 1).all():
        out = np.zeros((draws.shape[0], patterns.shape[1]))
        out[:, nonzero.argmax(1)] = draws
        return out
    return draws.astype(np.float64) @ patterns.astype(np.float64)


@dataclass
class Ratings:
    """Elo point estimates with percentile bootstrap intervals, per competitor."""

    players: list
    elo: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    battles: np.ndarray          # battles each competitor took part in
    wins: np.ndarray             # battles each competitor won
    n_episodes: int
    samples: Optional[np.ndarray] = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {p: {"elo": float(self.elo[i]), "lo": float(self.lo[i]), "hi": float(self.hi[i]),
                    "battles": int(self.battles[i]), "battle_wins": int(self.wins[i])}
                for i, p in enumerate(self.players)}


def rate(battles: Battles, n_boot: int = N_BOOTSTRAP, by: str = "episode", seed: int = 0,
         C: float = C_DEFAULT, level: float = 0.95, keep_samples: bool = False) -> Ratings:
    """Point fit plus bootstrap CI for one set of battles."""
    wins = battles.win_matrix()
    k = len(battles.players)
    elo = fit_bt(wins, C) if k else np.zeros(0)
    if n_boot and k and battles.n:
        samples = fit_bt_batch(bootstrap_wins(battles, n_boot, by, seed), C, start=elo)
        alpha = (1.0 - level) / 2.0
        lo, hi = np.percentile(samples, [100 * alpha, 100 * (1 - alpha)], axis=0)
    else:
        samples, lo, hi = None, elo.copy(), elo.copy()
    played = wins.sum(0) + wins.sum(1)
    return Ratings(list(battles.players), elo, lo, hi, played, wins.sum(1), battles.n_episodes,
                   samples if keep_samples else None)


def rate_records(records: Sequence[dict], *, label=None, compare: str = "reward",
                 players: Optional[Sequence[str]] = None, **kwargs) -> Ratings:
    return rate(collect_battles(records, label, compare, players), **kwargs)


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
