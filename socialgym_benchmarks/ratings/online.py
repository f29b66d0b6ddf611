"""Online Elo: the classical sequential update the paper's released code also offers (K = 32,
every rating starting at 1000, one pass over the episodes in a shuffled order, ties skipped
there); path-dependent, so the order is a seeded shuffle and is part of the result."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .battles import Battles
from .fit import ANCHOR, BASE, SCALE

ONLINE_K = 32.0            # the paper's released online Elo step


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


