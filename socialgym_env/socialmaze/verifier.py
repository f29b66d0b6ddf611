"""Uniqueness verifier for Hidden Role Deduction (the paper's Algorithm 1, made exact).

A *hypothesis* is a full role assignment that respects the public role counts
(1 Criminal, x Rumormongers, y Lunatics, the rest Investigators) and Player 1's
told role (told Investigator => truly Investigator or Rumormonger; told Criminal
=> truly Criminal or Lunatic). It is *consistent* when every statement of every
player it calls an Investigator is true. Criminal, Rumormonger and Lunatic
statements carry no constraint: each may be true or false. An instance is
released only when all consistent hypotheses agree on the Criminal and on
Player 1's true role.

How it stays fast. Instead of walking all ``n!/(x! y! ...)`` assignments:

1. For each player ``v`` a bitmask ``honest[v]`` holds the criminals ``c`` under
   which all of ``v``'s statements are true ("u is the criminal" keeps only bit u;
   "u is not" clears bit u).
2. For each criminal ``c`` the players that lie under ``c`` (other than ``c``)
   must all be Rumormongers or Lunatics; call that set ``B``. Any superset ``S``
   of ``B`` of size x + y among the non-criminals, split into x Rumormongers and y
   Lunatics, gives a consistent hypothesis, so the number of hypotheses per
   (criminal, Player 1's role) is a product of binomials. Player 1's told role only
   fixes whether Player 1 is in ``S`` and on which side of the split.

So the check is exhaustive (every hypothesis is counted exactly once) at
``O(n * statements)`` cost. :func:`iter_consistent_assignments` enumerates the
same hypotheses explicitly (criminal, then the forced liars, then the rest) for
inspection and for the tests, which compare both against itertools brute force.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb
from typing import Iterable, Iterator

from .instance import Puzzle, Role

Triple = tuple[int, int, bool]  # (speaker, target, says_criminal), 0-based players


def _comb(n: int, k: int) -> int:
    # math.comb rejects negatives; an impossible choice simply has zero ways.
    return comb(n, k) if 0 <= k <= n else 0


@dataclass(frozen=True)
class Verification:
    """Result of the exhaustive check.

    ``candidates`` maps (criminal, Player 1's true role) — criminal 1-based — to the
    number of consistent role assignments with that answer.
    """

    candidates: dict[tuple[int, Role], int]

    @property
    def n_consistent(self) -> int:
        return sum(self.candidates.values())

    @property
    def unique(self) -> bool:
        return len(self.candidates) == 1

    @property
    def answer(self) -> tuple[int, Role] | None:
        return next(iter(self.candidates)) if self.unique else None

    @property
    def criminal(self) -> int | None:
        a = self.answer
        return a[0] if a else None

    @property
    def player1_role(self) -> Role | None:
        a = self.answer
        return a[1] if a else None


def honest_masks(n: int, triples: Iterable[Triple]) -> list[int]:
    """Bit ``c`` of ``masks[v]`` is set iff all of v's statements are true when c is the criminal."""
    full = (1 << n) - 1
    masks = [full] * n
    for speaker, target, says_criminal in triples:
        masks[speaker] &= (1 << target) if says_criminal else full & ~(1 << target)
    return masks


def count_candidates(
    n: int, n_rumormongers: int, n_lunatics: int, told_criminal: bool, triples: Iterable[Triple]
) -> dict[tuple[int, Role], int]:
    """Core counter on raw data (0-based players; keys use 0-based criminals).

    The generator calls this directly to avoid building dataclasses per attempt.
    """
    x, y = n_rumormongers, n_lunatics
    k = x + y
    m = n - 1  # players other than the criminal
    masks = honest_masks(n, triples)
    out: dict[tuple[int, Role], int] = {}
    for c in range(n):
        bit = 1 << c
        liars = 0
        for v in range(n):
            if v != c and not masks[v] & bit:
                liars |= 1 << v
        b = liars.bit_count()
        if b > k:
            continue  # more forced liars than R/L seats: prune this criminal
        p1_liar = liars & 1
        # Forced set when Player 1 must itself be a Rumormonger/Lunatic.
        b_with_p1 = b if p1_liar else b + 1
        if told_criminal:
            if c == 0:
                ways = _comb(m - b, k - b) * _comb(k, x)
                if ways:
                    out[(0, Role.CRIMINAL)] = ways
            elif y >= 1:
                ways = _comb(m - b_with_p1, k - b_with_p1) * _comb(k - 1, y - 1)
                if ways:
                    out[(c, Role.LUNATIC)] = ways
        elif c != 0:
            if not p1_liar:
                # Player 1 is an Investigator: S avoids Player 1.
                ways = _comb(m - b - 1, k - b) * _comb(k, x)
                if ways:
                    out[(c, Role.INVESTIGATOR)] = ways
            if x >= 1:
                ways = _comb(m - b_with_p1, k - b_with_p1) * _comb(k - 1, x - 1)
                if ways:
                    out[(c, Role.RUMORMONGER)] = ways
    return out


def _triples(puzzle: Puzzle) -> list[Triple]:
    return [(s.speaker - 1, s.target - 1, s.says_criminal) for s in puzzle.statements]


def verify(puzzle: Puzzle) -> Verification:
    """Exhaustively check ``puzzle``; see the module docstring. Uses only public information."""
    cfg = puzzle.config
    raw = count_candidates(
        cfg.n_players,
        cfg.n_rumormongers,
        cfg.n_lunatics,
        puzzle.told_role == Role.CRIMINAL,
        _triples(puzzle),
    )
    return Verification({(c + 1, role): w for (c, role), w in sorted(raw.items())})


def solve_exact(puzzle: Puzzle) -> tuple[int, Role]:
    """The exact solver: the unique (criminal, Player 1's role). Raises if ambiguous."""
    result = verify(puzzle)
    if result.answer is None:
        raise ValueError(
            f"puzzle has no unique answer: {len(result.candidates)} candidate answers, "
            f"{result.n_consistent} consistent assignments"
        )
    return result.answer


def iter_consistent_assignments(puzzle: Puzzle) -> Iterator[tuple[Role, ...]]:
    """Yield every consistent role assignment (roles[i] is Player i+1's role).

    Enumeration order: criminal, then the R/L set as forced liars plus free picks,
    then the R/L split — criminals with too many forced liars are pruned. Meant for
    inspection and tests on small games; :func:`verify` counts without listing.
    """
    cfg = puzzle.config
    n, x, y = cfg.n_players, cfg.n_rumormongers, cfg.n_lunatics
    masks = honest_masks(n, _triples(puzzle))
    allowed_p1 = {
        Role.INVESTIGATOR: (Role.INVESTIGATOR, Role.RUMORMONGER),
        Role.CRIMINAL: (Role.CRIMINAL, Role.LUNATIC),
    }[puzzle.told_role]
    for c in range(n):
        others = [v for v in range(n) if v != c]
        forced = [v for v in others if not masks[v] >> c & 1]
        if len(forced) > x + y:
            continue
        free = [v for v in others if v not in forced]
        for extra in itertools.combinations(free, x + y - len(forced)):
            deceivers = forced + list(extra)
            for rumor in itertools.combinations(deceivers, x):
                roles = [Role.INVESTIGATOR] * n
                roles[c] = Role.CRIMINAL
                for v in deceivers:
                    roles[v] = Role.RUMORMONGER if v in rumor else Role.LUNATIC
                if roles[0] in allowed_p1:
                    yield tuple(roles)
