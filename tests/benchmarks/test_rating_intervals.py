"""Profile-likelihood Elo intervals, estimability, role-gap intervals, the games-equal overall,
decision columns, separated pairs and held-out validity (socialgym_benchmarks.ratings, .leaderboard,
.interval_coverage, .validity): planted effects are found, nulls are covered or not flagged,
separation does not collapse the interval."""

import math

import numpy as np
import pytest

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.studies import interval_coverage as ic
from socialgym_benchmarks.leaderboard.summary import summarize


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


# ----------------------------------------------------------------------------- games equal
def duel(game, a_wins, i):
    roster = [{"agent": "x", "policy": "A", "team": "", "role": "player"},
              {"agent": "y", "policy": "B", "team": "", "role": "player"}]
    reward = {"x": 1.0 if a_wins else -1.0, "y": -1.0 if a_wins else 1.0}
    return {"episode_id": f"{game}-{i}", "game": game, "finished": True, "roster": roster, "rewards": reward,
            "scores": reward}


def test_games_equal_follows_the_games_not_the_battle_count():
    # one game with many battles A mostly wins, two with few battles B mostly wins
    records = ([duel("chess", i % 5 != 0, i) for i in range(100)]
               + [duel(g, i % 5 == 0, i) for g in ("kuhn_poker", "prisoners_dilemma") for i in range(10)])
    summary = summarize(records, n_boot=50)
    pooled, equal = summary["overall"], summary["game_weighted"]["overall"]
    assert pooled["A"]["elo"] > pooled["B"]["elo"] and equal["B"]["elo"] > equal["A"]["elo"]
    assert pooled["A"]["elo_games_equal"] == equal["A"]["elo"]
    assert summary["game_weighted"]["battle_share"]["chess"] == pytest.approx(100 / 120)
    # null: games alike in size and outcome -> the two fits agree
    alike = [duel(g, i % 3 != 0, i) for g in ("chess", "kuhn_poker") for i in range(30)]
    same = summarize(alike, n_boot=0)
    assert same["overall"]["A"]["elo"] == pytest.approx(same["game_weighted"]["overall"]["A"]["elo"], abs=1e-6)


def test_games_equal_interval_does_not_collapse_under_separation():
    # A wins every battle of three games of 18, 4 and 2 episodes: every stratified bootstrap
    # resample is the same weighted record, so its interval is a point
    records = [duel(g, True, i) for g, n in (("chess", 18), ("kuhn_poker", 4), ("prisoners_dilemma", 2))
               for i in range(n)]
    boot = summarize(records, n_boot=300, interval="bootstrap")["game_weighted"]["overall"]["A"]
    prof = summarize(records, interval="profile")["game_weighted"]["overall"]["A"]
    assert boot["hi"] - boot["lo"] < 1
    assert prof["lo"] > 1000 and (prof["hi"] is None or prof["hi"] - prof["lo"] > 400)


def test_games_equal_profile_interval_keeps_coverage_where_the_bootstrap_does_not():
    spread = ic.games_equal_coverage(ic.PLANTED["spread"], 12, reps=30, n_boot=100)
    assert spread["profile"]["coverage"] >= 0.9
    assert spread["bootstrap"]["coverage"] < 0.7
    null = ic.games_equal_coverage((1000.0,) * 4, 50, reps=30, methods=("profile",))
    assert null["profile"]["coverage"] >= 0.9 and null["profile"]["median_width"] < 400


def test_games_equal_battles_weights_games_equally_and_one_game_is_the_pooled_likelihood():
    small, large = battles_of([(0, 1), (1, 0)]), battles_of([(0, 1)] * 6 + [(1, 0)] * 2)
    both = bt.games_equal_battles([small, large])
    assert both.win_matrix() == pytest.approx(np.array([[0, 2.5 + 3.75], [2.5 + 1.25, 0]]))
    assert both.n_episodes == 10 and set(both.episode[:2]) == {0, 1} and set(both.episode[2:]) == set(range(2, 10))
    one = bt.games_equal_battles([large])                 # one game: every weight 1
    assert one.win_matrix() == pytest.approx(large.win_matrix())
    contrast = np.array([0.5, -0.5])
    assert bt.design_effect(one, contrast) == pytest.approx(bt.design_effect(large, contrast))
    # the same likelihood; only the reference quantile differs (F(1, 7) for 8 episodes, not chi2_1)
    elo = bt.fit_bt(large.win_matrix())
    (lo_w, hi_w), (lo, hi) = bt.profile_elo_intervals(one, elo), bt.profile_elo_intervals(large, elo)
    assert lo_w[0] < lo[0] < hi[0] < hi_w[0]


def test_weighted_design_effect_scales_with_the_weights():
    # a likelihood weighted by c is c times as curved and its score c times as large: the
    # statistic grows by c, so the design effect must too, or the interval would shrink
    rng = np.random.default_rng(4)
    pairs = [(0, 1) if rng.random() < 0.6 else (1, 0) for _ in range(40)]
    plain = battles_of(pairs)
    contrast = np.array([0.5, -0.5])
    def weighted(c):
        return bt.Battles(plain.players, plain.winner, plain.loser, plain.episode, plain.n_episodes,
                          np.full(plain.n, c))
    unit = bt.contrast_interval(weighted(1.0), np.array([1.0, -1.0]), np.full(2, 1000.0))
    for c in (0.25, 3.0):
        assert bt.design_effect(weighted(c), contrast) == pytest.approx(c * bt.design_effect(plain, contrast))
        assert bt.contrast_interval(weighted(c), np.array([1.0, -1.0]), np.full(2, 1000.0)) == pytest.approx(
            unit, abs=15)


# ----------------------------------------------------------------------------- decisions
def test_decision_stats_count_first_tries_reasks_fallbacks_tokens_and_cost():
    from socialgym_benchmarks.cli import parse_prices
    from socialgym_benchmarks.leaderboard.summary import decision_stats
    ok = {"reply": "a", "action": "a", "usage": {"prompt_tokens": 100, "new_tokens": 10}}
    bad = {"reply": "?", "error": "no action", "usage": {"prompt_tokens": 120, "new_tokens": 20}}
    turns = [{"agent": "x", "valid": True, "agent_meta": {"attempts": [ok]}},          # right first time
             {"agent": "x", "valid": True, "agent_meta": {"attempts": [bad, ok]}},     # right after a re-ask
             {"agent": "x", "valid": False, "fallback": True, "agent_meta": {"attempts": [bad, bad]}},
             {"agent": "x", "valid": True, "agent_meta": {"attempts": [ok]}},
             {"agent": "y", "valid": True}, {"agent": "y", "valid": True}]             # scripted: no usage
    record = dict(duel("chess", True, 0), turns=turns)
    prices = parse_prices(["A=2,10"])
    stats = decision_stats([record], prices)
    a, b = stats["A"], stats["B"]
    assert a["decisions"] == 4 and a["invalid_first_rate"] == 0.5 and a["invalid_rate"] == 0.25
    assert a["fallbacks"] == 1
    assert a["prompt_tokens"] == (100 + 220 + 240 + 100) / 4 and a["completion_tokens"] == (10 + 30 + 40 + 10) / 4
    assert a["cost"] == pytest.approx((660 * 2 + 90 * 10) / 1e6)
    assert b == {"decisions": 2, "invalid_first_rate": 0.0, "invalid_rate": 0.0, "fallbacks": 0,
                 "prompt_tokens": None, "completion_tokens": None, "cost": None, "seconds": None, "batch": None}
    with pytest.raises(ValueError):
        parse_prices(["A=2"])


# ----------------------------------------------------------------------------- separated pairs
def test_separated_pairs_find_a_planted_difference_and_not_a_null_one():
    rng = np.random.default_rng(6)
    planted = [duel("chess", rng.random() < 0.85, i) for i in range(60)]        # A ~300 Elo above B
    null = [duel("chess", rng.random() < 0.5, i) for i in range(60)]
    found = summarize(planted, n_boot=0)["separated"]
    assert found["overall"][0] | {"lo": None, "hi": None, "difference": None} == {
        "higher": "A", "lower": "B", "separated": True, "lo": None, "hi": None, "difference": None}
    assert found["overall"][0]["lo"] > 0 and found["per_game"]["chess"][0]["separated"]
    assert not summarize(null, n_boot=0)["separated"]["overall"][0]["separated"]
    # three policies: three pairs, so each pair's interval is at 1 - 0.05 / 3
    three = [dict(duel("chess", True, i), roster=[{"agent": "x", "policy": a, "team": "", "role": "player"},
                                                   {"agent": "y", "policy": b, "team": "", "role": "player"}])
             for i, (a, b) in enumerate([("A", "B"), ("B", "C"), ("A", "C")] * 5)]
    assert summarize(three, n_boot=0)["separated"]["level_overall"] == pytest.approx(1 - 0.05 / 3)


# ----------------------------------------------------------------------------- validity
def test_validity_beats_the_coin_on_a_planted_effect_and_not_on_a_null():
    from socialgym_benchmarks.ratings.validity import CHOICES, validity
    rng = np.random.default_rng(7)
    planted = validity([duel("chess", rng.random() < 0.85, i) for i in range(80)], folds=4)
    assert set(planted) == set(CHOICES) and all(row["battles"] == 80 for row in planted.values())
    assert planted["coin"]["log_loss"] == pytest.approx(math.log(2))
    gain = planted["coin"]["log_loss_vs_pooled"]                    # coin minus pooled, paired
    assert gain > 2 * planted["coin"]["log_loss_se_vs_pooled"]     # the fit predicts held-out episodes
    null = validity([duel("chess", rng.random() < 0.5, i) for i in range(80)], folds=4)
    assert null["pooled"]["log_loss"] > math.log(2) - 0.02          # nothing to learn: no better than the coin
    with pytest.raises(ValueError):
        validity([duel("chess", True, 0)], folds=4)
    draws = [{**duel("chess", True, i), "rewards": {"x": 0.0, "y": 0.0}, "scores": {"x": 0.0, "y": 0.0}}
             for i in range(8)]
    with pytest.raises(ValueError, match="no decisive battle"):    # all draws: one line, not a None in the table
        validity(draws, folds=4)


def test_side_split_policy_on_real_werewolves_games_gets_a_positive_gap_excluding_zero():
    from socialgym_benchmarks.studies.role_gap_games import SPLIT, hidden_role_games, play_game
    assert "werewolves" in hidden_role_games() and "chess" not in hidden_role_games()
    row = play_game("werewolves", episodes=10)[SPLIT]
    assert row["gap_identified"] and row["gap"] > 0 and row["gap_lo"] > 0
