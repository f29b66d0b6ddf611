"""The Hidden Role Deduction verifier against an itertools brute force and hand-built cases."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from functools import lru_cache

import pytest

from socialgym_env.socialmaze import (
    MazeConfig,
    Puzzle,
    Role,
    Statement,
    generate_instance,
    solve_exact,
    verify,
)
from socialgym_env.socialmaze.instance import POSSIBLE_TRUE_ROLES
from socialgym_env.socialmaze.verifier import iter_consistent_assignments

I, C, R, L = Role.INVESTIGATOR, Role.CRIMINAL, Role.RUMORMONGER, Role.LUNATIC


@lru_cache(maxsize=None)
def _all_assignments(n: int, x: int, y: int) -> tuple[tuple[Role, ...], ...]:
    pool = [C] + [R] * x + [L] * y + [I] * (n - 1 - x - y)
    return tuple(sorted(set(itertools.permutations(pool))))


def brute_force(puzzle: Puzzle) -> dict[tuple[int, Role], int]:
    """Reference: walk every role assignment, keep those where Investigators never lie."""
    cfg = puzzle.config
    out: Counter[tuple[int, Role]] = Counter()
    for roles in _all_assignments(cfg.n_players, cfg.n_rumormongers, cfg.n_lunatics):
        if roles[0] not in POSSIBLE_TRUE_ROLES[puzzle.told_role]:
            continue
        criminal = roles.index(C) + 1
        if all(s.is_true(criminal) for s in puzzle.statements if roles[s.speaker - 1] == I):
            out[(criminal, roles[0])] += 1
    return dict(sorted(out.items()))


def brute_force_assignments(puzzle: Puzzle) -> set[tuple[Role, ...]]:
    cfg = puzzle.config
    keep = set()
    for roles in _all_assignments(cfg.n_players, cfg.n_rumormongers, cfg.n_lunatics):
        if roles[0] not in POSSIBLE_TRUE_ROLES[puzzle.told_role]:
            continue
        crim = roles.index(C) + 1
        if all(s.is_true(crim) for s in puzzle.statements if roles[s.speaker - 1] == I):
            keep.add(roles)
    return keep


def make_puzzle(n, variant, x, y, told, rounds):
    """rounds: list of rounds, each a list of (speaker, target, says_criminal), 1-based."""
    cfg = MazeConfig(n_players=n, n_rounds=len(rounds), variant=variant, n_rumormongers=x, n_lunatics=y)
    stmts = [Statement(t, s, u, c) for t, rnd in enumerate(rounds, 1) for (s, u, c) in rnd]
    return Puzzle(cfg, told, tuple(stmts))


def random_puzzle(rng: random.Random) -> Puzzle:
    n = rng.randint(4, 7)
    variant = rng.choice(["original", "rumormonger", "lunatic", "full"])
    room = n - 2  # x + y must leave one Investigator
    if variant == "original":
        x = y = 0
    elif variant == "rumormonger":
        x, y = rng.randint(1, min(2, room)), 0
    elif variant == "lunatic":
        x, y = 0, rng.randint(1, min(2, room))
    else:
        x = rng.randint(0, min(2, room))
        y = rng.randint(0 if x else 1, min(2, room - x))
    told = rng.choice([I, C])
    t = rng.randint(1, 3)
    # Accusations are rarer than clearances, as in real games; that keeps many random
    # puzzles consistent and a fair share of them ambiguous.
    rounds = []
    for _ in range(t):
        rnd = []
        for s in range(1, n + 1):
            u = rng.choice([v for v in range(1, n + 1) if v != s])
            rnd.append((s, u, rng.random() < 0.25))
        rounds.append(rnd)
    return make_puzzle(n, variant, x, y, told, rounds)


def test_counts_match_brute_force_on_random_puzzles():
    rng = random.Random(20240607)
    kinds = Counter()
    for _ in range(300):
        p = random_puzzle(rng)
        expected = brute_force(p)
        got = verify(p).candidates
        assert got == expected, p
        kinds["empty" if not expected else "unique" if len(expected) == 1 else "ambiguous"] += 1
    # The sample must exercise all three outcomes, or the comparison proves little.
    assert kinds["unique"] >= 20 and kinds["ambiguous"] >= 20 and kinds["empty"] >= 20, kinds


def test_enumerator_lists_exactly_the_brute_force_assignments():
    rng = random.Random(7)
    for _ in range(120):
        p = random_puzzle(rng)
        listed = list(iter_consistent_assignments(p))
        assert len(listed) == len(set(listed))  # each hypothesis once
        assert set(listed) == brute_force_assignments(p)
        assert len(listed) == verify(p).n_consistent


@pytest.mark.parametrize("variant", ["original", "rumormonger", "lunatic", "full"])
def test_generated_instances_match_brute_force(variant):
    cfg = MazeConfig.from_preset("easy", variant)
    for seed in range(40):
        inst = generate_instance(cfg, seed)
        expected = brute_force(inst.puzzle)
        assert expected == {(inst.criminal, inst.player1_role): inst.n_consistent}
        assert verify(inst.puzzle).candidates == expected


def test_hand_built_unique_original():
    # P1 (told Investigator, no Rumormongers, so truly Investigator) accuses P2, P3 agrees.
    # Criminal 3 or 4 would make P1 a liar, and there are no liars besides the Criminal.
    p = make_puzzle(4, "original", 0, 0, I, [[(1, 2, True), (2, 1, True), (3, 2, True), (4, 3, False)]])
    v = verify(p)
    assert v.candidates == {(2, I): 1}
    assert (v.unique, v.criminal, v.player1_role, v.n_consistent) == (True, 2, I, 1)
    assert solve_exact(p) == (2, I)


def test_hand_built_ambiguous_criminal_is_rejected():
    # Everyone clears someone who is not P3/P4: both P3 and P4 remain possible criminals.
    p = make_puzzle(4, "original", 0, 0, I, [[(1, 2, False), (2, 1, False), (3, 1, False), (4, 1, False)]])
    v = verify(p)
    assert v.candidates == {(3, I): 1, (4, I): 1}
    assert (v.unique, v.answer, v.criminal, v.player1_role, v.n_consistent) == (False, None, None, None, 2)
    with pytest.raises(ValueError, match="no unique answer: 2 candidate answers, 2 consistent"):
        solve_exact(p)


def test_hand_built_ambiguous_self_role_is_rejected():
    # Criminal is surely P2, but P1's statements are all true, so P1 may be the
    # Investigator or the Rumormonger (then P3 or P4 is the other).
    p = make_puzzle(4, "rumormonger", 1, 0, I, [[(1, 2, True), (2, 3, True), (3, 2, True), (4, 2, True)]])
    v = verify(p)
    assert v.candidates == {(2, I): 2, (2, R): 1}
    assert not v.unique and v.answer is None and v.n_consistent == 3


def test_hand_built_lunatic_self_role():
    # Told Criminal. If P1 were the Criminal, P2, P3, P4 would all be liars (one seat).
    # Only "P3 is the Criminal and P1 is the Lunatic" leaves a single liar (P1).
    p = make_puzzle(4, "lunatic", 0, 1, C, [[(1, 2, True), (2, 3, True), (3, 2, True), (4, 3, True)]])
    v = verify(p)
    assert v.candidates == {(3, L): 1}
    assert solve_exact(p) == (3, L)


def test_hand_built_unique_answer_with_several_assignments():
    # Told Criminal with no Lunatics: P1 is the Criminal; the Rumormonger can be any of
    # the four others, so 4 consistent assignments share one answer.
    p = make_puzzle(5, "rumormonger", 1, 0, C, [[(1, 2, True), (2, 1, True), (3, 1, True), (4, 1, True), (5, 1, True)]])
    v = verify(p)
    assert v.candidates == {(1, C): 4}
    assert v.unique and v.n_consistent == 4


def test_told_role_constrains_true_role():
    # Same log under both told roles: told Investigator can never yield Criminal/Lunatic,
    # told Criminal can never yield Investigator/Rumormonger.
    rounds = [[(1, 3, False), (2, 3, False), (3, 1, False), (4, 3, False), (5, 3, False), (6, 3, False)]]
    for told, allowed in ((I, {I, R}), (C, {C, L})):
        p = make_puzzle(6, "full", 1, 1, told, rounds)
        cands = verify(p).candidates
        assert cands and {role for _, role in cands} <= allowed
        assert cands == brute_force(p)


def test_inconsistent_log_has_no_candidates():
    # Three players name three different criminals: at most one can be right, and with
    # only the Criminal allowed to lie (original) the other two Investigators clash.
    p = make_puzzle(4, "original", 0, 0, I, [[(1, 2, True), (2, 3, True), (3, 4, True), (4, 2, True)]])
    assert verify(p).candidates == {}
    assert verify(p).n_consistent == 0
