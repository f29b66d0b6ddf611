"""Puzzle generator for Hidden Role Deduction: simulate a game, then certify it.

One *attempt* deals roles, simulates ``T`` simultaneous rounds with the role
policies below, and runs the exhaustive verifier; an attempt is released only
when every consistent hypothesis agrees on the Criminal and on Player 1's true
role. Player 1's true role is drawn uniformly over the roles present in the
variant *once per instance* and kept across rejected attempts, so the released
data set stays uniform over Player 1's role (redrawing it per attempt would skew
it toward the roles that certify more easily). Player 1's told role follows from
the true role (Rumormonger -> Investigator, Lunatic -> Criminal).

Policies (paper, "Hidden Role Deduction"), all reading only the public history
before the current round:

* Investigator — ``F_I``: picks a target with probability growing with how often
  the target was accused and how often its statements were contradicted, and
  shrinking when two or more players cleared it; then states the truth.
* Rumormonger — targets with ``F_I`` (it believes it is an Investigator); each
  statement is true or false with probability 1/2, whatever the truth.
* Criminal — ``F_C``: prefers players who accused it, then players already under
  suspicion (to divert suspicion); says "u is the criminal" with a probability
  ``p_t`` that is higher for accusers and suspects, else "u is not the criminal".
* Lunatic — believes it is the Criminal and runs ``F_C`` from its own seat.

Randomness: one ``random.Random(seed)`` per instance; no global state.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from .instance import TOLD_ROLE, MazeConfig, MazeInstance, Puzzle, Role, Statement, parse_role
from .verifier import count_candidates

# Policy constants: targets lean on the public evidence without being deterministic,
# so logs vary while staying solvable often enough (acceptance ~0.8-1.0, see perf).
SUSPICION_PER_ACCUSATION = 0.8
SUSPICION_PER_CONTRADICTION = 0.5
CLEAR_DISCOUNT = 0.7  # per clearing speaker beyond the first
CRIMINAL_WEIGHT_ACCUSER = 3.0  # added per accusation the target made against the actor
CRIMINAL_WEIGHT_SUSPECT = 1.0  # target already accused by someone else
P_ACCUSE_ACCUSER = 0.75
P_ACCUSE_SUSPECT = 0.6
P_ACCUSE_OTHER = 0.35

DEFAULT_MAX_ATTEMPTS = 10_000


class History:
    """Public aggregates of all statements so far (0-based players); updated per round."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.accused = [0] * n  # statements "u is the criminal"
        self.accusations = [[0] * n for _ in range(n)]  # accusations[s][u]
        self.clearers: list[set[int]] = [set() for _ in range(n)]  # who said "u is not"
        self.accusers: list[set[int]] = [set() for _ in range(n)]
        self.named: list[set[int]] = [set() for _ in range(n)]  # whom s called criminal
        self.cleared_by: list[set[int]] = [set() for _ in range(n)]  # whom s cleared
        self.contradictions = [0] * n
        self.statements: list[tuple[int, int, bool]] = []

    def add_round(self, triples: Sequence[tuple[int, int, bool]]) -> None:
        for s, u, claim in triples:
            if claim:
                self.accused[u] += 1
                self.accusations[s][u] += 1
                self.accusers[u].add(s)
                self.named[s].add(u)
            else:
                self.clearers[u].add(s)
                self.cleared_by[s].add(u)
        self.statements.extend(triples)
        # Contradictions of a speaker: its statements opposed by someone else's claim
        # about the same target, plus self-inconsistency (naming two criminals, or
        # both accusing and clearing the same player).
        contra = [0] * self.n
        for s, u, claim in self.statements:
            opposing = self.clearers[u] if claim else self.accusers[u]
            if len(opposing) > (s in opposing):
                contra[s] += 1
        for s in range(self.n):
            contra[s] += max(0, len(self.named[s]) - 1) + len(self.named[s] & self.cleared_by[s])
        self.contradictions = contra


def investigator_weights(me: int, hist: History) -> list[float]:
    """``F_I`` target weights (0 for ``me``): suspicion up with accusations and
    contradictions, down once a player is cleared by two or more others."""
    w = []
    for u in range(hist.n):
        if u == me:
            w.append(0.0)
            continue
        clears = len(hist.clearers[u] - {me})
        score = (
            SUSPICION_PER_ACCUSATION * hist.accused[u]
            + SUSPICION_PER_CONTRADICTION * hist.contradictions[u]
            - CLEAR_DISCOUNT * max(0, clears - 1)
        )
        w.append(math.exp(score))
    return w


def criminal_policy(me: int, hist: History) -> tuple[list[float], list[float]]:
    """``F_C`` from ``me``'s seat: (target weights, probability of saying "u is the criminal")."""
    weights, p_accuse = [], []
    for u in range(hist.n):
        if u == me:
            weights.append(0.0)
            p_accuse.append(0.0)
            continue
        hits_me = hist.accusations[u][me]
        suspect = hist.accused[u] - hist.accusations[me][u] > 0  # accused by someone else
        weights.append(
            1.0 + CRIMINAL_WEIGHT_ACCUSER * hits_me + (CRIMINAL_WEIGHT_SUSPECT if suspect else 0.0)
        )
        p_accuse.append(P_ACCUSE_ACCUSER if hits_me else P_ACCUSE_SUSPECT if suspect else P_ACCUSE_OTHER)
    return weights, p_accuse


def simulate_game(
    roles: Sequence[Role], n_rounds: int, rng: random.Random
) -> list[tuple[int, int, int, bool]]:
    """Play ``n_rounds`` simultaneous rounds; return (round, speaker, target, claim), 0-based players."""
    n = len(roles)
    criminal = roles.index(Role.CRIMINAL)
    players = range(n)
    hist = History(n)
    log: list[tuple[int, int, int, bool]] = []
    for t in range(1, n_rounds + 1):
        triples = []
        # Everyone decides from the history before this round (statements are simultaneous).
        for v in players:
            role = roles[v]
            if role in (Role.CRIMINAL, Role.LUNATIC):
                weights, p_accuse = criminal_policy(v, hist)
                u = rng.choices(players, weights)[0]
                claim = rng.random() < p_accuse[u]
            else:
                u = rng.choices(players, investigator_weights(v, hist))[0]
                truth = u == criminal
                if role == Role.INVESTIGATOR:
                    claim = truth
                else:  # Rumormonger: true or false with probability 1/2 each
                    claim = truth if rng.random() < 0.5 else not truth
            triples.append((v, u, claim))
        hist.add_round(triples)
        log.extend((t, v, u, claim) for v, u, claim in triples)
    return log


def deal_roles(config: MazeConfig, player1_role: Role, rng: random.Random) -> list[Role]:
    """Player 1 gets ``player1_role``; the remaining roles are shuffled over Players 2..n."""
    pool: list[Role] = []
    for role, k in config.role_counts().items():
        pool += [role] * k
    pool.remove(player1_role)
    rng.shuffle(pool)
    return [player1_role, *pool]


@dataclass
class GenerationStats:
    attempts: int = 0
    accepted: int = 0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.attempts if self.attempts else 0.0


def _player1_role(config: MazeConfig, player1_role: Role | str | None, rng: random.Random) -> Role:
    """Player 1's true role: ``player1_role``, or drawn uniformly over the roles present."""
    present = config.roles_present()
    if player1_role is None:
        return rng.choice(present)
    p1 = parse_role(player1_role)
    if p1 not in present:
        raise ValueError(
            f"player1_role {p1.value} is absent from variant {config.variant!r}; "
            f"valid: {', '.join(r.value for r in present)}"
        )
    return p1


def generate_instance(
    config: MazeConfig,
    seed: int,
    *,
    instance_id: str | None = None,
    player1_role: Role | str | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    stats: GenerationStats | None = None,
) -> MazeInstance:
    """Generate one certified instance; the same (config, seed) always gives the same instance.

    ``player1_role`` forces Player 1's true role (default: uniform over the roles present).
    Raises ``RuntimeError`` if no certifiable game turns up within ``max_attempts``.
    """
    rng = random.Random(seed)
    p1 = _player1_role(config, player1_role, rng)
    told_criminal = TOLD_ROLE[p1] == Role.CRIMINAL
    n = config.n_players
    for attempt in range(1, max_attempts + 1):
        roles = deal_roles(config, p1, rng)
        log = simulate_game(roles, config.n_rounds, rng)
        candidates = count_candidates(
            n,
            config.n_rumormongers,
            config.n_lunatics,
            told_criminal,
            [(v, u, claim) for _, v, u, claim in log],
        )
        if stats is not None:
            stats.attempts += 1
        if len(candidates) != 1:
            continue
        (c, role), ways = next(iter(candidates.items()))
        # The true assignment is always consistent, so a unique answer must be the truth.
        assert roles[c] == Role.CRIMINAL and role == p1, "verifier disagrees with the truth"
        if stats is not None:
            stats.accepted += 1
        return MazeInstance(
            id=instance_id if instance_id is not None else f"hrd-{config.preset}-{config.variant}-{seed}",
            seed=seed,
            puzzle=Puzzle(
                config=config,
                told_role=TOLD_ROLE[p1],
                statements=tuple(Statement(t, v + 1, u + 1, claim) for t, v, u, claim in log),
            ),
            roles=tuple(roles),
            n_consistent=ways,
            attempts=attempt,
        )
    raise RuntimeError(
        f"no uniquely solvable game in {max_attempts} attempts for {config}; "
        "too few Investigators or rounds make certification unlikely"
    )
