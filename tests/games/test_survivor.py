"""Survivor: discussion, votes, jury, plea, final rewards."""

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.survivor import final_rewards

from helpers import finish_dead, play, public_lines, random_junk_episode

GAME = "survivor"
# Seed 0: Yusuf, Björn, Chidi, Quinn, Cyrus, Bea are player_0..5.
R1 = ["pass"] * 6 + ["vote Bea"] * 5 + ["vote Yusuf"]
R2 = ["pass"] * 5 + ["vote Cyrus"] * 3 + ["vote Yusuf"] * 2
R3_TIE = ["pass"] * 4 + ["vote Björn", "vote Yusuf", "vote Björn", "vote Yusuf"]
PLEA = ["say Vote for me, I played fair.", "pass", "say I carried this game."]


def test_final_rewards_table():
    assert final_rewards(["a", "b", "c", "d"], ["a", "b"], "b") == {"a": 0.0, "b": 1.0, "c": -1.0, "d": -1.0}


def test_discussion_order_rotates_and_eliminated_do_not_act():
    env = play(GAME, [])
    order = []
    for _ in range(6):
        order.append(env.agent_selection)
        env.step("pass")
    assert order == [f"player_{i}" for i in range(6)]
    assert env.state.phase == "vote" and env.pending_actors() == [f"player_{i}" for i in range(6)]
    for move in R1[6:]:
        env.step(move)
    order = []
    for _ in range(5):
        order.append(env.agent_selection)
        env.step("say hello")
    # round 2 starts with seat 1; Bea (player_5) is out and never acts
    assert order == ["player_1", "player_2", "player_3", "player_4", "player_0"]
    assert env.pending_actors() == ["player_0", "player_1", "player_2", "player_3", "player_4"]


def test_votes_plurality_rng_tie_jury_and_rewards():
    env = play(GAME, R1 + R2 + R3_TIE)
    assert public_lines(env)[1:] == [
        "[R1 vote] Moderator: Round 1 votes: Yusuf → Bea; Björn → Bea; Chidi → Bea; Quinn → Bea; Cyrus → Bea; Bea → Yusuf.",
        "[R1 vote] Moderator: Bea is voted out and joins the jury.",
        "[R2 discussion] Moderator: Round 2: Yusuf, Björn, Chidi, Quinn, Cyrus remain.",
        "[R2 vote] Moderator: Round 2 votes: Yusuf → Cyrus; Björn → Cyrus; Chidi → Cyrus; Quinn → Yusuf; Cyrus → Yusuf.",
        "[R2 vote] Moderator: Cyrus is voted out and joins the jury.",
        "[R3 discussion] Moderator: Round 3: Yusuf, Björn, Chidi, Quinn remain.",
        "[R3 vote] Moderator: Round 3 votes: Yusuf → Björn; Björn → Yusuf; Chidi → Björn; Quinn → Yusuf.",
        "[R3 vote] Moderator: Tie between Yusuf, Björn: broken at random, Yusuf is chosen.",
        "[R3 vote] Moderator: Yusuf is voted out and joins the jury.",
        "[R3 vote] Moderator: Finalists: Björn, Chidi, Quinn. Jury: Bea, Cyrus, Yusuf. Each finalist makes one plea."]
    s = env.state
    assert s.alive() == ["player_1", "player_2", "player_3"]
    assert s.g.jury == ["player_5", "player_4", "player_0"]
    # plea: the finalists speak once each, in seat order
    assert s.phase == "plea"
    order = []
    for move in PLEA:
        order.append(env.agent_selection)
        env.step(move)
    assert order == ["player_1", "player_2", "player_3"]
    # jury: the eliminated act (allow_eliminated), voting for a finalist only
    assert s.phase == "jury" and env.pending_actors() == ["player_5", "player_4", "player_0"]
    assert sorted(env.infos["player_5"]["legal_action_list"]) == ["vote Björn", "vote Chidi", "vote Quinn"]
    with pytest.raises(InvalidActionError):
        env.step("vote Yusuf")        # a juror is not a finalist
    for move in ["vote Chidi", "vote Chidi", "vote Quinn"]:
        env.step(move)
    assert public_lines(env)[-4:] == [
        "[R3 plea] Quinn: I carried this game.",
        "[R3 jury] Moderator: Jury votes: Yusuf → Quinn; Cyrus → Chidi; Bea → Chidi.",
        "[R3 jury] Moderator: The jury elects Chidi.",
        "[R3 jury] Moderator: Game over: the jury chose Chidi over Björn, Quinn."]
    expected = {"player_0": -1.0, "player_1": 0.0, "player_2": 1.0, "player_3": 0.0, "player_4": -1.0, "player_5": -1.0}
    assert s.result.rewards == expected and s.result.scores == expected
    assert s.result.winners == ("player_2",)
    assert [env.infos[a]["outcome"] for a in s.agents] == ["loss", "draw", "win", "draw", "loss", "loss"]
    finish_dead(env)


def test_jury_tie_broken_by_rng_and_announced():
    env = play(GAME, R1 + R2 + R3_TIE + PLEA + ["vote Björn", "vote Chidi", "vote Quinn"])
    # jurors act in elimination order: Bea, Cyrus, Yusuf
    assert public_lines(env)[-4:] == [
        "[R3 jury] Moderator: Jury votes: Yusuf → Quinn; Cyrus → Chidi; Bea → Björn.",
        "[R3 jury] Moderator: Tie between Björn, Chidi, Quinn: broken at random, Chidi is chosen.",
        "[R3 jury] Moderator: The jury elects Chidi.",
        "[R3 jury] Moderator: Game over: the jury chose Chidi over Björn, Quinn."]
    assert env.state.result.rewards == {"player_0": -1.0, "player_1": 0.0, "player_2": 1.0, "player_3": 0.0,
                                        "player_4": -1.0, "player_5": -1.0}


def test_cannot_vote_for_oneself_or_an_eliminated_player():
    env = play(GAME, ["pass"] * 6)
    with pytest.raises(InvalidActionError, match="NAME must be one of: Björn, Chidi, Quinn, Cyrus, Bea"):
        env.step("vote Yusuf")
    env = play(GAME, R1 + ["pass"] * 5)
    with pytest.raises(InvalidActionError):
        env.step("vote Bea")


def test_invalid_vote_falls_back_to_a_random_legal_vote():
    env = socialgym_env.make(GAME)
    env.reset(seed=0)
    for _ in range(6):
        env.step("pass")
    env.step("vote myself please")
    assert env.infos["player_0"]["invalid_action"]["raw"] == "vote myself please"
    for move in R1[7:]:
        env.step(move)
    assert "Bea is voted out and joins the jury." in public_lines(env)[-2]


def test_random_and_junk_play_ends_by_the_rules_with_one_winner_and_three_losers():
    # the generic random-play checks, for every game, are in tests/test_conformance.py
    for seed in range(15):
        record = random_junk_episode(GAME, seed, ["junk"]).episode_record()
        assert record["finished"] and not record["truncated"], seed
        assert sorted(record["rewards"].values()) == [-1.0, -1.0, -1.0, 0.0, 0.0, 1.0]


def test_turn_cap_gives_everyone_zero():
    env = play(GAME, ["pass"] * 4, max_steps=4)
    assert env.state.result.truncated
    assert env.state.result.rewards == {a: 0.0 for a in env.state.agents}
    assert env.truncations["player_0"]
