"""Profile-likelihood Elo intervals, estimability and role-gap intervals (socialgym_benchmarks.elo,
.leaderboard, .interval_coverage): planted effects are found, nulls are covered, separation does
not collapse the interval."""

import numpy as np
import pytest

from socialgym_benchmarks import elo as bt
from socialgym_benchmarks import interval_coverage as ic
from socialgym_benchmarks.leaderboard import summarize


def battles_of(pairs, episodes=None):
    """Battles from (winner, loser) index pairs, one episode each unless told."""
    w, l = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    ep = np.arange(len(pairs)) if episodes is None else np.asarray(episodes)
    k = int(max(w.max(), l.max())) + 1
    return bt.Battles([f"p{i}" for i in range(k)], w, l, ep, int(ep.max()) + 1)


def test_separation_gives_a_wide_one_sided_interval_not_the_penalty_s():
    # the case: 18 of 18 battles won; the bootstrap's resamples are all 18-0, so its
    # interval only tracks the penalty's response to the battle count (about 25 Elo wide)
    battles = battles_of([(0, 1)] * 18)
    boot = bt.rate(battles, n_boot=300, seed=1)
    prof = bt.rate(battles, interval="profile")
    assert boot.hi[0] - boot.lo[0] < 60
    assert prof.lo[0] > 1000 and prof.hi[0] - prof.lo[0] > 400          # the effect is there; its size is not pinned
    assert prof.hi[1] < 1000 and prof.lo[0] == pytest.approx(2000 - prof.hi[1])


def test_planted_strengths_are_covered_where_the_bootstrap_is_not():
    spread = ic.coverage(ic.PLANTED["spread"], 12, reps=30, methods=("profile", "bootstrap-episode"), n_boot=100)
    assert spread["profile"]["coverage"] >= 0.9
    assert spread["bootstrap-episode"]["coverage"] < 0.7                 # the collapse this replaces


def test_equal_strengths_are_covered():
    null = ic.coverage((1000.0,) * 4, 50, reps=30, methods=("profile",))
    assert null["profile"]["coverage"] >= 0.9
    assert null["profile"]["median_width"] < 400


def test_design_effect_counts_an_episode_s_repeated_battles_once():
    rng = np.random.default_rng(3)
    pairs = [(0, 1) if rng.random() < 0.6 else (1, 0) for _ in range(60)]
    single = battles_of(pairs)
    doubled = battles_of([p for p in pairs for _ in range(2)], np.repeat(np.arange(60), 2))
    contrast = np.array([0.5, -0.5])
    assert bt.design_effect(single, contrast) == pytest.approx(1.0)
    assert bt.design_effect(doubled, contrast) == pytest.approx(2.0)
    a = bt.contrast_interval(single, np.array([1.0, -1.0]), np.full(2, 1000.0))
    b = bt.contrast_interval(doubled, np.array([1.0, -1.0]), np.full(2, 1000.0))
    assert b[1] - b[0] == pytest.approx(a[1] - a[0], rel=0.2)           # the copies add no information


def test_estimable_is_the_design_matrix_rank():
    # two components {0, 1}, {2, 3}: 0 - 1 is pinned, 0 - 2 is not, (0 - 2) + (3 - 1) is not either,
    # but once 1 meets 2 everything is
    battles = battles_of([(0, 1), (1, 0), (2, 3), (3, 2)])
    assert bt.estimable(battles, np.array([1.0, -1.0, 0, 0]))
    assert not bt.estimable(battles, np.array([1.0, 0, -1.0, 0]))
    assert bt.contrast_interval(battles, np.array([1.0, 0, -1.0, 0]), np.full(4, 1000.0)) == (-np.inf, np.inf)
    joined = battles_of([(0, 1), (1, 0), (2, 3), (3, 2), (1, 2)])
    assert bt.estimable(joined, np.array([1.0, 0, -1.0, 0]))


# ----------------------------------------------------------------------------- role gaps
def test_a_side_dependent_policy_gets_the_right_sign_and_an_interval_excluding_zero():
    # "split" plays like the strong policy on the alt side and like the weak one on the main side
    table = summarize(ic.team_game_records(ic.SIDE_SPLIT, 20, np.random.default_rng(4)), n_boot=200)["roles"]["werewolves"]
    row = table["split"]
    assert row["gap_identified"] and row["gap"] > 0 and row["gap_lo"] > 0
    assert row["gap_boot_lo"] is not None and row["gap_boot_lo"] <= row["gap"] <= row["gap_boot_hi"]
    for side_blind in ("strong", "weak"):
        assert table[side_blind]["gap_lo"] < 0 < table[side_blind]["gap_hi"]


def test_side_blind_gaps_cover_zero_and_two_policies_are_not_identified():
    rng = np.random.default_rng(5)
    strength = ic.SIDE_BLIND
    covered = [lo <= 0 <= hi for _ in range(25)
               for _, lo, hi in ic.gap_intervals(ic.team_game_records(strength, 8, rng)).values()]
    assert len(covered) == 75 and np.mean(covered) >= 0.88
    two = summarize(ic.team_game_records({"a": strength["a"], "b": strength["b"]}, 10, rng), n_boot=50)["roles"]["werewolves"]
    assert not two["a"]["gap_identified"] and two["a"]["gap_lo"] is None and two["a"]["gap_boot_lo"] is None
