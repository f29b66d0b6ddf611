"""Dead Last: strict-majority pointing, final negotiation and offers."""
import json
import random

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.dead_last import offer_scores, random_split, shares_reason

from helpers import finish_dead, play, public_lines, random_junk_episode

GAME = "dead_last"
# Seed 0: Yusuf, Björn, Chidi, Quinn, Cyrus, Bea are player_0..5.
R1_NO_MAJORITY = ["pass"] * 6 + ["point Bea"] * 3 + ["point Yusuf"] * 3
R2_BEA = ["pass"] * 6 + ["point Bea"] * 4 + ["point Yusuf"] * 2
R3_CYRUS = ["pass"] * 5 + ["point Cyrus"] * 3 + ["point Yusuf"] * 2
R4_QUINN = ["pass"] * 4 + ["point Quinn"] * 3 + ["point Yusuf"]
TO_FINAL = R1_NO_MAJORITY + R2_BEA + R3_CYRUS + R4_QUINN
NEGOTIATE = ["say 50 30 20, in the listed order?", "say Fine.", "pass"]


def test_pure_rules():
    assert shares_reason((50, 30, 20)) is None
    assert shares_reason((50, 30, 10)) == "shares must sum to 100 (got 90)"
    agents = ["a", "b", "c", "d"]
    assert offer_scores(agents, ["a", "b", "c"], {"a": (50, 30, 20), "b": (50, 30, 20), "c": (50, 30, 20)}) == \
        {"a": 0.5, "b": 0.3, "c": 0.2, "d": -1.0}
    assert offer_scores(agents, ["a", "b", "c"], {"a": (50, 30, 20), "b": (50, 30, 20), "c": (40, 40, 20)}) == \
        {"a": 0.0, "b": 0.0, "c": 0.0, "d": -1.0}
    rng = random.Random(3)
    for k in (3, 4, 6):
        split = random_split(rng, k)
        assert len(split) == k and sum(split) == 100 and min(split) >= 0


def test_strict_majority_eliminations_to_the_final_and_identical_offers():
    env = play(GAME, TO_FINAL)
    assert public_lines(env)[1:] == [
        "[R1 point] Moderator: Point round 1: Yusuf → Bea; Björn → Bea; Chidi → Bea; Quinn → Yusuf; Cyrus → Yusuf; Bea → Yusuf.",
        "[R1 point] Moderator: No strict majority (needs 4 of 6): nobody is eliminated.",
        "[R2 discussion] Moderator: Round 2: Yusuf, Björn, Chidi, Quinn, Cyrus, Bea remain.",
        "[R2 point] Moderator: Point round 2: Yusuf → Bea; Björn → Bea; Chidi → Bea; Quinn → Bea; Cyrus → Yusuf; Bea → Yusuf.",
        "[R2 point] Moderator: Bea is eliminated.",
        "[R3 discussion] Moderator: Round 3: Yusuf, Björn, Chidi, Quinn, Cyrus remain.",
        "[R3 point] Moderator: Point round 3: Yusuf → Cyrus; Björn → Cyrus; Chidi → Cyrus; Quinn → Yusuf; Cyrus → Yusuf.",
        "[R3 point] Moderator: Cyrus is eliminated.",
        "[R4 discussion] Moderator: Round 4: Yusuf, Björn, Chidi, Quinn remain.",
        "[R4 point] Moderator: Point round 4: Yusuf → Quinn; Björn → Quinn; Chidi → Quinn; Quinn → Yusuf.",
        "[R4 point] Moderator: Quinn is eliminated.",
        "[R4 point] Moderator: Final: the survivors are Yusuf, Björn, Chidi (offers list shares in this order). "
        "Each says one message, then offers a split of 100."]
    s = env.state
    assert s.phase == "final_negotiation" and s.g.survivors == ["player_0", "player_1", "player_2"]
    for move in NEGOTIATE:
        env.step(move)
    assert s.phase == "final_offer" and env.pending_actors() == ["player_0", "player_1", "player_2"]
    assert "Offer a split of 100, privately: one share each for Yusuf, Björn, Chidi (in this order)" in \
        env.observe("player_0")["text"]
    for _ in range(3):
        env.step("offer 50 30 20")
    assert public_lines(env)[-2:] == [
        "[R4 final_offer] Moderator: Final offers (Yusuf, Björn, Chidi): Yusuf → 50 30 20; Björn → 50 30 20; Chidi → 50 30 20.",
        "[R4 final_offer] Moderator: Game over: identical offers: Yusuf 0.50, Björn 0.30, Chidi 0.20; the eliminated score −1."]
    assert s.result.scores == {"player_0": 0.5, "player_1": 0.3, "player_2": 0.2,
                               "player_3": -1.0, "player_4": -1.0, "player_5": -1.0}
    # a deal: the largest share (Yusuf, 50) +1, the other survivors 0, every eliminated −1
    assert s.result.rewards == {"player_0": 1.0, "player_1": 0.0, "player_2": 0.0,
                                "player_3": -1.0, "player_4": -1.0, "player_5": -1.0}
    assert env.game.metrics(s) == {"point_rounds": 4, "survivors": 3, "deal": True}
    finish_dead(env)


def test_mismatched_offers_pay_survivors_nothing():
    env = play(GAME, TO_FINAL + NEGOTIATE + ["offer 50 30 20", "offer 50 30 20", "offer 34 33 33"])
    assert env.state.result.scores == {"player_0": 0.0, "player_1": 0.0, "player_2": 0.0,
                                       "player_3": -1.0, "player_4": -1.0, "player_5": -1.0}
    assert public_lines(env)[-1] == ("[R4 final_offer] Moderator: Game over: the offers differ: every survivor "
                                     "scores 0; the eliminated score −1.")
    # no deal: every survivor 0 (not +1 as a median split would give), the eliminated −1
    assert env.state.result.rewards == {"player_0": 0.0, "player_1": 0.0, "player_2": 0.0,
                                        "player_3": -1.0, "player_4": -1.0, "player_5": -1.0}


def test_offer_must_sum_to_100_with_reason():
    env = play(GAME, TO_FINAL + NEGOTIATE)
    with pytest.raises(InvalidActionError, match=r"shares must sum to 100 \(got 90\)"):
        env.step("offer 50 30 10")
    with pytest.raises(InvalidActionError):
        env.step("offer 50 50")            # one share per survivor
    with pytest.raises(InvalidActionError):
        env.step("offer 120 -10 -10")      # shares are 0–100
    fallback = socialgym_env.make(GAME)
    fallback.reset(seed=0)
    for move in TO_FINAL + NEGOTIATE:
        fallback.step(move)
    fallback.step("offer 60 30 20")
    assert fallback.infos["player_0"]["invalid_action"]["reason"] == "shares must sum to 100 (got 110)"
    fallback.step("offer 50 30 20")
    fallback.step("offer 50 30 20")
    offers = fallback.state.g.offers
    assert sum(offers["player_0"]) == 100      # a random valid split replaced the invalid offer


def test_offers_are_private_until_all_are_in():
    def views(first_offer):
        env = play(GAME, TO_FINAL + NEGOTIATE + [first_offer])
        return {a: (env.observe(a)["text"], json.dumps(env.infos[a], sort_keys=True, default=str),
                    [m.text for m in env.state.visible_to(a)]) for a in env.state.agents if a != "player_0"}
    assert views("offer 50 30 20") == views("offer 0 0 100")


def test_cannot_point_at_oneself():
    env = play(GAME, ["pass"] * 6)
    with pytest.raises(InvalidActionError):
        env.step("point Yusuf")
    with pytest.raises(InvalidActionError):
        env.step("vote Björn")


def test_final_after_ten_point_rounds_with_all_six():
    cycle = [f"point player_{(i + 1) % 6}" for i in range(6)]
    env = play(GAME, (["pass"] * 6 + cycle) * 10)
    s = env.state
    assert s.g.point_rounds == 10 and s.phase == "final_negotiation"
    assert s.g.survivors == [f"player_{i}" for i in range(6)]
    for _ in range(6):
        env.step("pass")
    with pytest.raises(InvalidActionError):
        env.step("offer 50 30 20")             # six survivors: six shares
    for _ in range(6):
        env.step("offer 50 50 0 0 0 0")
    assert s.result.scores == {"player_0": 0.5, "player_1": 0.5, "player_2": 0.0, "player_3": 0.0,
                               "player_4": 0.0, "player_5": 0.0}
    assert s.result.rewards == {"player_0": 1.0, "player_1": 1.0, "player_2": 0.0, "player_3": 0.0,
                                "player_4": 0.0, "player_5": 0.0}


def test_tied_largest_shares_both_win_and_elo_compares_shares():
    from socialgym_benchmarks.ratings import episode_pairs

    env = play(GAME, TO_FINAL + NEGOTIATE + ["offer 40 40 20"] * 3)
    assert env.state.result.rewards == {"player_0": 1.0, "player_1": 1.0, "player_2": 0.0,
                                        "player_3": -1.0, "player_4": -1.0, "player_5": -1.0}
    record = env.episode_record(policies={f"player_{i}": f"p{i}" for i in range(6)})
    pairs = episode_pairs(record)
    # compared on scores (shares): p0 and p1 tie (no pair), each beats p2, p2 beats the eliminated
    assert ("p0", "p2") in pairs and ("p1", "p2") in pairs and ("p2", "p3") in pairs
    assert ("p0", "p1") not in pairs and ("p1", "p0") not in pairs and len(pairs) == 11


def test_point_round_limit_is_configurable():
    env = play(GAME, ["pass"] * 6 + [f"point player_{(i + 1) % 6}" for i in range(6)], max_point_rounds=1)
    assert env.state.phase == "final_negotiation"


def test_random_and_junk_play_ends_by_the_rules_within_132_steps():
    # the generic random-play checks, for every game, are in tests/test_conformance.py
    for seed in range(12):
        record = random_junk_episode(GAME, seed, ["offer 1 2 3"]).episode_record()
        assert record["finished"] and not record["truncated"] and record["steps"] <= 132, seed


def test_turn_cap_no_deal():
    env = play(GAME, R1_NO_MAJORITY + R2_BEA, max_steps=24)
    assert env.state.result.truncated
    assert env.state.result.scores["player_5"] == -1.0
    # no deal: the five survivors draw, the eliminated Bea loses
    assert env.state.result.rewards == {"player_0": 0.0, "player_1": 0.0, "player_2": 0.0, "player_3": 0.0,
                                        "player_4": 0.0, "player_5": -1.0}
