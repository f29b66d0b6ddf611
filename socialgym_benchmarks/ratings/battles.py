"""Battles: the pairwise outcomes a Bradley–Terry fit rates (paper §3.3, Appendix B).

Pairs: within an episode, free-for-all games compare every cross-policy pair of seats by the
final outcome (reward by default, or score); two-team games compare only cross-team seats;
same-policy pairs are skipped. Same-value pairs (ties) follow ``ties``: ``exclude`` (default)
leaves them out, as the paper's text says (Appendix B "Same-score pairs"); ``split`` counts
each as one win and one loss each way, as the paper's released BT code does (it duplicates a
tie into an a-wins and a b-wins row), so its published tables can be rebuilt.

Identification (:func:`components`): a BT fit pins the differences between competitors only
within a connected component of the battle graph; the L2 penalty centres each component on
its own, so differences across components are an artefact of the penalty, not of the data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

# The seats' values and teams are read where the arena's live ratings read them too.
from socialgym_agents.skill import is_team_record, seat_values

TIES = ("exclude", "split")


def check_ties(ties: str) -> str:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    return ties


# ----------------------------------------------------------------------------- pairs
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


def restrict(battles: Battles, keep: np.ndarray) -> Battles:
    """The battles among the competitors ``keep`` (sorted indices), re-indexed; episodes keep
    their numbers (and count), so the episode clustering is unchanged."""
    keep = np.asarray(keep, dtype=np.int64)
    mask = np.isin(battles.winner, keep) & np.isin(battles.loser, keep)
    return Battles([battles.players[i] for i in keep], np.searchsorted(keep, battles.winner[mask]),
                   np.searchsorted(keep, battles.loser[mask]), battles.episode[mask], battles.n_episodes,
                   None if battles.weight is None else battles.weight[mask])


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

