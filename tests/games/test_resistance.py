"""Rule tests for The Resistance, played through the env with scripted moves.

Seed 0 deals: player_0 Yusuf, player_1 Björn, player_2 Chidi (Resistance), player_3 Quinn,
player_4 Cyrus (Spies); the first leader drawn by the env's RNG is Chidi (player_2).
"""
import math

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.resistance import (TEAM_SIZES, game_winner, mission_fails, mission_size,
                                            proposal_approved)

P = [f"player_{i}" for i in range(5)]
NAMES = ["Yusuf", "Björn", "Chidi", "Quinn", "Cyrus"]
SPIES = ["player_3", "player_4"]


def new_env(**config):
    env = socialgym_env.make("resistance", invalid_action="raise", **config)
    env.reset(seed=0)
    s = env.state
    assert [s.name(a) for a in P] == NAMES
    assert [s.role(a) for a in P] == ["Resistance", "Resistance", "Resistance", "Spy", "Spy"]
    assert s.g.leader == "player_2"
    return env


def step(env, agent, action):
    assert env.agent_selection == agent, (env.agent_selection, agent, env.state.phase)
    env.step(action)


def discuss(env, leader):
    """Everyone passes, starting at the leader."""
    start = P.index(leader)
    for i in range(5):
        step(env, P[(start + i) % 5], "pass")


def vote(env, choices):
    for agent, choice in zip(P, choices):
        step(env, agent, choice)


def proposal(env, leader, team, votes):
    discuss(env, leader)
    step(env, leader, "propose " + " ".join(team))
    vote(env, votes)


def mission(env, cards):
    """cards: {agent: card} in seat order of the team."""
    for agent, card in cards.items():
        step(env, agent, card)


APPROVE = ["approve"] * 5
REJECT = ["reject"] * 5


# ------------------------------------------------------------------ pure rules
def test_pure_rules():
    assert [mission_size(m) for m in range(1, 6)] == [2, 3, 2, 3, 3] == list(TEAM_SIZES)
    assert proposal_approved({"a": "approve", "b": "approve", "c": "approve", "d": "reject", "e": "reject"})
    assert not proposal_approved({"a": "approve", "b": "approve", "c": "reject", "d": "reject", "e": "reject"})
    assert mission_fails({"a": "success", "b": "fail", "c": "fail"}) == 2
    assert game_winner(3, 0, 0) == "resistance"
    assert game_winner(0, 3, 0) == "spies"
    assert game_winner(2, 2, 5) == "spies"
    assert game_winner(2, 2, 4) is None


# ------------------------------------------------------------------ setup and visibility
def test_spies_know_each_other_and_nobody_else_does():
    env = new_env()
    line = "The Spies are Quinn, Cyrus. Fail missions without being caught."
    for agent in P:
        visible = [m.text for m in env.state.visible_to(agent)]
        text = env.observe(agent)["text"]
        data = env.game.public_data(env.state, agent)
        if agent in SPIES:
            assert line in visible
            assert "[R1] Moderator (team only): " + line in text
            assert data["known_spies"] == SPIES
        else:
            assert line not in visible
            assert "The Spies are" not in text and "fellow Spy" not in text
            assert "known_spies" not in data
    assert "You are a Spy. Your fellow Spy is Cyrus." in env.observe("player_3")["text"]
    assert "You are a Spy. Your fellow Spy is Quinn." in env.observe("player_4")["text"]
    assert env.episode_record()["transcript"] == [
        "[R1] Moderator: The Resistance begins. Mission team sizes: 2, 3, 2, 3, 3. "
        "The first leader, drawn at random, is Chidi.",
        "[R1 discussion] Moderator: Mission 1 (team of 2), proposal 1 of 5: Chidi leads."]


def test_discussion_starts_at_the_leader_and_is_public():
    env = new_env()
    step(env, "player_2", "say I propose myself and Yusuf.")
    for agent in ("player_3", "player_4", "player_0", "player_1"):
        step(env, agent, "pass")
    assert env.agent_selection == "player_2" and env.state.phase == "proposal"
    assert "[R1 discussion] Chidi: I propose myself and Yusuf." in env.episode_record()["transcript"]


# ------------------------------------------------------------------ proposals
def test_team_size_must_be_exact_and_distinct():
    env = new_env()
    discuss(env, "player_2")
    info = env.infos["player_2"]
    assert len(info["legal_action_list"]) == math.comb(5, 2)
    for bad in ("propose Chidi", "propose Chidi Yusuf Björn", "propose Chidi Chidi", "propose Chidi Nobody"):
        with pytest.raises(InvalidActionError):
            env.step(bad)
    step(env, "player_2", "propose Yusuf Chidi")
    assert env.state.g.team == ("player_0", "player_2")
    assert "[R1 proposal] Moderator: Chidi proposes the team Yusuf, Chidi." in env.episode_record()["transcript"]


def test_team_sizes_of_all_five_missions():
    """Missions 1-5 need 2, 3, 2, 3, 3 players: play all five (2 fail, 2 succeed, then the 5th)."""
    env = new_env()
    teams = [["Yusuf", "Chidi"], ["Yusuf", "Björn", "Chidi"], ["Yusuf", "Quinn"],
             ["Björn", "Chidi", "Cyrus"], ["Yusuf", "Björn", "Chidi"]]
    cards = [{"player_0": "success", "player_2": "success"},
             {"player_0": "success", "player_1": "success", "player_2": "success"},
             {"player_0": "success", "player_3": "fail"},
             {"player_1": "success", "player_2": "success", "player_4": "fail"},
             {"player_0": "success", "player_1": "success", "player_2": "success"}]
    leader = 2
    for m in range(5):
        assert env.state.g.mission == m + 1
        discuss(env, P[leader])
        info = env.infos[P[leader]]
        assert len(info["legal_action_list"]) == math.comb(5, TEAM_SIZES[m])
        assert info["game_state"]["team_size"] == TEAM_SIZES[m]
        step(env, P[leader], "propose " + " ".join(teams[m]))
        vote(env, APPROVE)
        mission(env, cards[m])
        leader = (leader + 1) % 5
    assert env.rewards == {"player_0": 1.0, "player_1": 1.0, "player_2": 1.0, "player_3": -1.0, "player_4": -1.0}
    assert env.state.result.reason == "3 missions succeeded: the Resistance wins"


# ------------------------------------------------------------------ votes, leaders, rejections
def test_five_rejections_in_a_row_spies_win_and_leader_rotates():
    env = new_env()
    leaders = []
    for i in range(5):
        leader = env.state.g.leader
        leaders.append(leader)
        proposal(env, leader, ["Yusuf", "Björn"], REJECT if i % 2 == 0 else
                 ["approve", "approve", "reject", "reject", "reject"])
    assert leaders == ["player_2", "player_3", "player_4", "player_0", "player_1"]
    assert env.state.result.reason == "5 proposals in a row were rejected: the Spies win"
    assert env.rewards == {"player_0": -1.0, "player_1": -1.0, "player_2": -1.0, "player_3": 1.0, "player_4": 1.0}
    transcript = env.episode_record()["transcript"]
    assert "[R1 vote] Moderator: Votes: Yusuf reject; Björn reject; Chidi reject; Quinn reject; Cyrus reject. " \
           "Rejected (0 of 5 approve)." in transcript
    assert "[R1 vote] Moderator: Votes: Yusuf approve; Björn approve; Chidi reject; Quinn reject; Cyrus reject. " \
           "Rejected (2 of 5 approve)." in transcript
    assert "[R1 discussion] Moderator: Mission 1 (team of 2), proposal 5 of 5: Björn leads." in transcript


def test_strict_majority_approves_and_resets_the_rejection_count():
    env = new_env()
    proposal(env, "player_2", ["Yusuf", "Björn"], REJECT)
    proposal(env, "player_3", ["Yusuf", "Björn"], REJECT)
    assert env.state.g.rejections == 2
    proposal(env, "player_4", ["Yusuf", "Björn"], ["approve", "approve", "approve", "reject", "reject"])
    assert env.state.phase == "mission" and env.state.g.rejections == 0
    assert "[R1 vote] Moderator: Votes: Yusuf approve; Björn approve; Chidi approve; Quinn reject; Cyrus reject. " \
           "Approved (3 of 5 approve)." in env.episode_record()["transcript"]
    mission(env, {"player_0": "success", "player_1": "success"})
    # the leadership moves on after the mission too
    assert env.state.g.leader == "player_0" and env.state.g.mission == 2


def test_invalid_vote_falls_back_to_reject():
    env = socialgym_env.make("resistance")
    env.reset(seed=0)
    discuss(env, "player_2")
    step(env, "player_2", "propose Yusuf Chidi")
    vote(env, ["approve", "approve", "yes please", "reject", "reject"])
    assert env.turns[-3]["action"] == "reject" and env.turns[-3]["fallback"]
    assert env.state.phase == "discussion" and env.state.g.rejections == 1


# ------------------------------------------------------------------ missions
def test_resistance_members_can_only_succeed():
    env = new_env()
    proposal(env, "player_2", ["Yusuf", "Quinn"], APPROVE)
    assert env.infos["player_0"]["legal_action_list"] == ["success"]
    with pytest.raises(InvalidActionError):
        env.step("fail")
    step(env, "player_0", "success")
    assert env.infos["player_3"]["legal_action_list"] == ["success", "fail"]


def test_mission_result_shows_only_the_fail_count():
    env = new_env()
    discuss(env, "player_2")
    step(env, "player_2", "propose Chidi Quinn")
    vote(env, APPROVE)
    before = len(env.state.messages)
    mission(env, {"player_2": "success", "player_3": "fail"})
    new = env.state.messages[before:]
    result = "Mission 1 (Chidi, Quinn) failed: 1 fail card. Score: Resistance 0, Spies 1."
    assert new[0].text == result and new[0].visibility == "public"
    # nothing else said about the cards, to anyone
    assert all("fail" not in m.text or m.text == result for m in new)
    for agent in P:
        text = env.observe(agent)["text"]
        assert "Quinn fail" not in text and "played fail" not in text
        assert env.game.public_data(env.state, agent)["results"] == [
            {"mission": 1, "team": ["player_2", "player_3"], "fails": 1, "success": False}]
    # the per-card actions live only in the (offline) turn log
    assert [t["action"] for t in env.turns[-2:]] == ["success", "fail"]


def test_two_fail_cards_are_counted():
    env = new_env()
    discuss(env, "player_2")
    step(env, "player_2", "propose Quinn Cyrus")
    vote(env, APPROVE)
    mission(env, {"player_3": "fail", "player_4": "fail"})
    assert "[R1 mission] Moderator: Mission 1 (Quinn, Cyrus) failed: 2 fail cards. Score: Resistance 0, Spies 1." \
        in env.episode_record()["transcript"]


def test_three_failed_missions_spies_win():
    env = new_env()
    leader = 2
    for team, cards in ((["Yusuf", "Quinn"], {"player_0": "success", "player_3": "fail"}),
                        (["Yusuf", "Björn", "Cyrus"], {"player_0": "success", "player_1": "success", "player_4": "fail"}),
                        (["Chidi", "Quinn"], {"player_2": "success", "player_3": "fail"})):
        proposal(env, P[leader], team, APPROVE)
        mission(env, cards)
        leader = (leader + 1) % 5
    assert env.state.result.reason == "3 missions failed: the Spies win"
    assert env.rewards == {"player_0": -1.0, "player_1": -1.0, "player_2": -1.0, "player_3": 1.0, "player_4": 1.0}
    assert env.episode_record()["metrics"] == {"missions_succeeded": 0, "missions_failed": 3, "proposals": 3,
                                               "rejected_proposals": 0}


def test_three_successes_resistance_wins_after_a_failure():
    env = new_env()
    leader = 2
    for team, cards in ((["Yusuf", "Chidi"], {"player_0": "success", "player_2": "success"}),
                        (["Yusuf", "Björn", "Quinn"], {"player_0": "success", "player_1": "success", "player_3": "fail"}),
                        (["Björn", "Chidi"], {"player_1": "success", "player_2": "success"}),
                        (["Yusuf", "Björn", "Cyrus"], {"player_0": "success", "player_1": "success", "player_4": "success"})):
        proposal(env, P[leader], team, APPROVE)
        mission(env, cards)
        leader = (leader + 1) % 5
    record = env.episode_record()
    assert record["reason"] == "3 missions succeeded: the Resistance wins"
    assert record["winners"] == ["player_0", "player_1", "player_2"]
    assert "[R4 mission] Moderator: Mission 4 (Yusuf, Björn, Cyrus) succeeded: 0 fail cards. " \
           "Score: Resistance 3, Spies 1." in record["transcript"]
    assert record["transcript"][-1] == "[R4 mission] Moderator: Game over: 3 missions succeeded: the Resistance wins."
