"""Rule tests for Avalon, played through the env with scripted moves.

The deal comes from the seed; each test reads it from the state (who holds which role) and acts
on it, so the tests say which rule they check rather than which seat a seed dealt.
"""
import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError
from socialgym_env.games.avalon import (ASSASSIN, EVIL, GOOD, MERLIN, MINION, MORDRED, MORGANA, OBERON, PERCIVAL,
                                        QUEST_SIZES, SERVANT, TEAMS, fails_needed, role_deck)
from socialgym_env.testing import check_game

ALL_ROLES = {"percival": True, "morgana": True, "mordred": True, "oberon": True}


def new_env(seed=0, **config):
    env = socialgym_env.make("avalon", invalid_action="raise", **config)
    env.reset(seed=seed)
    return env


def holders(env, *roles):
    return env.state.with_role(*roles, alive_only=False)


def team(env, side):
    return env.state.on_team(side, alive_only=False)


def propose(env, members, vote="approve"):
    """Everyone passes in discussion, the leader proposes ``members``, everyone votes ``vote``
    (a str, or {agent: vote})."""
    s = env.state
    while s.phase == "discussion":
        env.step("pass")
    assert s.phase == "proposal" and env.agent_selection == s.g.leader
    env.step("propose " + " ".join(s.name(a) for a in members))
    while s.phase == "vote" and not s.finished:
        agent = env.agent_selection
        env.step(vote if isinstance(vote, str) else vote[agent])


def quest(env, cards):
    """Each member plays ``cards.get(member, "success")``."""
    s = env.state
    assert s.phase == "quest"
    while s.phase == "quest" and not s.finished:
        env.step(cards.get(env.agent_selection, "success"))


def good_members(env, size):
    return team(env, GOOD)[:size]


def succeed_quests(env, count):
    for _ in range(count):
        propose(env, good_members(env, env.game.team_size(env.state.g.mission)))
        quest(env, {})


# ------------------------------------------------------------------ pure rules and config
def test_published_team_and_quest_tables():
    assert TEAMS == {5: (3, 2), 6: (4, 2), 7: (4, 3), 8: (5, 3), 9: (6, 3), 10: (6, 4)}
    assert QUEST_SIZES[5] == (2, 3, 2, 3, 3) and QUEST_SIZES[6] == (2, 3, 4, 3, 4)
    assert QUEST_SIZES[7] == (2, 3, 3, 4, 4)
    assert QUEST_SIZES[8] == QUEST_SIZES[9] == QUEST_SIZES[10] == (3, 4, 4, 5, 5)
    assert [fails_needed(6, q) for q in range(1, 6)] == [1, 1, 1, 1, 1]
    for n in (7, 8, 9, 10):
        assert [fails_needed(n, q) for q in range(1, 6)] == [1, 1, 1, 2, 1]


@pytest.mark.parametrize("n", [5, 6, 7, 8, 9, 10])
def test_role_deck_has_the_published_sides_at_every_count(n):
    deck = role_deck({"num_players": n, "merlin": True, "percival": False, "morgana": False,
                      "mordred": False, "oberon": False})
    good, evil = TEAMS[n]
    assert sorted(deck) == sorted([(MERLIN, GOOD)] + [(SERVANT, GOOD)] * (good - 1)
                                  + [(ASSASSIN, EVIL)] + [(MINION, EVIL)] * (evil - 1))
    env = new_env(num_players=n)
    assert sorted((s.role, s.team) for s in env.state.seats) == sorted(deck)


def test_optional_roles_replace_servants_and_minions():
    env = new_env(num_players=10, **ALL_ROLES)
    roles = sorted(s.role for s in env.state.seats)
    assert roles == sorted([MERLIN, PERCIVAL, SERVANT, SERVANT, SERVANT, SERVANT, ASSASSIN, MORGANA, MORDRED, OBERON])


@pytest.mark.parametrize("config,message", [
    ({"morgana": True}, "morgana needs percival"),
    ({"merlin": False, "percival": True}, "percival needs merlin"),
    ({"merlin": False, "mordred": True}, "mordred needs merlin"),
    ({"percival": True, "morgana": True, "mordred": True}, "3 special evil roles but only 2 evil seats"),
    ({"num_players": 4}, "played by 5 or 6 or 7 or 8 or 9 or 10 players"),
])
def test_configurations_the_rules_forbid_are_refused(config, message):
    with pytest.raises(ConfigError, match=message):
        socialgym_env.make("avalon", **config)


def test_rules_text_states_the_configured_players_sizes_and_roles():
    env = new_env(num_players=8, percival=True, morgana=True)
    text = env.observe("player_0")["text"]
    assert "Avalon, 8 players: 5 good and 3 evil" in text
    assert "teams of 3, 4, 4, 5, 5" in text and "Quest 4 fails only on 2 fail cards" in text
    assert "Percival (good)" in text and "Morgana (evil)" in text and "Oberon" not in text
    five = new_env().observe("player_0")["text"]
    assert "Avalon, 5 players: 3 good and 2 evil" in five and "One fail card fails a quest." in five


@pytest.mark.parametrize("config", [{}, dict(num_players=10, **ALL_ROLES), {"num_players": 7, "merlin": False}])
def test_conformance(config):
    check_game("avalon", **config)


# ------------------------------------------------------------------ what each role sees
def private_names(env, agent):
    """The display names in the private messages ``agent`` received, beyond its own."""
    s = env.state
    texts = [m.text for m in s.visible_to(agent) if m.visibility != "public"]
    return {a for a in s.agents if a != agent and any(s.name(a) in t for t in texts)}


@pytest.mark.parametrize("seed", range(4))
def test_each_role_sees_exactly_what_the_rules_allow(seed):
    env = new_env(seed=seed, num_players=10, **ALL_ROLES)
    s = env.state
    evil = set(team(env, EVIL))
    merlin, = holders(env, MERLIN)
    morgana, = holders(env, MORGANA)
    mordred, = holders(env, MORDRED)
    oberon, = holders(env, OBERON)
    expected = {merlin: evil - {mordred}, holders(env, PERCIVAL)[0]: {merlin, morgana}, oberon: set()}
    for agent in evil - {oberon}:
        expected[agent] = evil - {oberon, agent}
    for agent in holders(env, SERVANT):
        expected[agent] = set()
    assert set(expected) == set(s.agents)
    for agent, sees in expected.items():
        assert private_names(env, agent) == sees, (s.role(agent), agent)
        data = env.game.public_data(env.state, agent)
        shown = set(data.get("known_evil", ())) | set(data.get("merlin_candidates", ()))
        assert shown == sees, s.role(agent)
        # every message a seat can read is public or addressed to it alone
        assert all(m.visibility == "public" or m.receivers == (agent,) for m in s.visible_to(agent))
    # nobody is told another seat's role by name: no private line names a role with a player
    for agent in s.agents:
        for m in s.visible_to(agent):
            if m.visibility != "public":
                for other in s.agents:
                    if other != agent and s.name(other) in m.text:
                        assert not any(f"{s.name(other)} is {r}" in m.text for r in (MERLIN, MORGANA, ASSASSIN, MORDRED))


def test_percival_without_morgana_knows_merlin():
    env = new_env(num_players=6, percival=True)
    percival, = holders(env, PERCIVAL)
    merlin, = holders(env, MERLIN)
    assert f"Merlin is {env.state.name(merlin)}." in env.observe(percival)["text"]
    assert env.game.public_data(env.state, percival)["merlin_candidates"] == [merlin]


def test_merlin_sees_oberon_and_evil_does_not():
    env = new_env(num_players=7, oberon=True)
    s = env.state
    oberon, = holders(env, OBERON)
    merlin, = holders(env, MERLIN)
    assert oberon in env.game.public_data(env.state, merlin)["known_evil"]
    for agent in set(team(env, EVIL)) - {oberon}:
        assert oberon not in env.game.public_data(env.state, agent)["known_evil"]
        assert "Oberon is evil too, but hidden from you." in env.observe(agent)["text"]
    assert "known_evil" not in env.game.public_data(env.state, oberon)
    assert "You do not know the other evil players" in env.observe(oberon)["text"]
    assert private_names(env, oberon) == set() and s.role(oberon) == OBERON


def test_servants_see_no_one():
    env = new_env(num_players=8)
    for agent in holders(env, SERVANT):
        assert private_names(env, agent) == set()
        assert not {"known_evil", "merlin_candidates"} & set(env.game.public_data(env.state, agent))


# ------------------------------------------------------------------ proposals, quests, endings
def test_good_can_only_succeed_and_evil_may_fail():
    env = new_env()
    members = [team(env, GOOD)[0], team(env, EVIL)[0]]
    propose(env, members)
    for _ in members:
        agent = env.agent_selection
        expected = ["success", "fail"] if env.state.team(agent) == EVIL else ["success"]
        assert env.infos[agent]["legal_action_list"] == expected
        if env.state.team(agent) == GOOD:
            with pytest.raises(InvalidActionError):
                env.step("fail")
        env.step("success")


def test_fourth_quest_at_seven_players_needs_two_fails():
    env = new_env(num_players=7)
    evil = team(env, EVIL)
    good = team(env, GOOD)
    for size in (2, 3):                     # quests 1 and 2 succeed
        propose(env, good[:size])
        quest(env, {})
    propose(env, evil[:1] + good[:2])       # quest 3 (3 players) fails on one card
    quest(env, {evil[0]: "fail"})
    assert env.state.g.failures == 1
    propose(env, evil[:1] + good[:3])       # quest 4 (4 players): one fail card is not enough
    quest(env, {evil[0]: "fail"})
    record = env.episode_record()
    line = [t for t in record["transcript"] if "Quest 4 (" in t and "needed" in t][0]
    assert "succeeded: 1 fail card (2 needed to fail it). Score: good 3, evil 1." in line
    assert env.state.phase == "assassination_talk"


def test_fourth_quest_at_six_players_fails_on_one():
    env = new_env(num_players=6)
    evil, good = team(env, EVIL), team(env, GOOD)
    propose(env, good[:2])                  # quest 1 succeeds
    quest(env, {})
    for size in (3, 4, 3):                  # quests 2, 3 and 4 each fail on one card
        propose(env, evil[:1] + good[:size - 1])
        quest(env, {evil[0]: "fail"})
    assert env.state.result.reason == "3 quests failed: evil wins"
    assert {a for a, r in env.rewards.items() if r > 0} == set(evil)


def test_five_rejections_in_a_row_evil_wins():
    env = new_env()
    leaders = []
    for _ in range(5):
        leaders.append(env.state.g.leader)
        propose(env, good_members(env, 2), vote="reject")
    assert len(set(leaders)) == 5           # the leadership passed round the table
    assert env.state.result.reason == "5 proposals in a row were rejected: evil wins"
    assert all(env.rewards[a] == (1.0 if env.state.team(a) == EVIL else -1.0) for a in env.possible_agents)


def test_an_approval_resets_the_rejection_count():
    env = new_env()
    for _ in range(4):
        propose(env, good_members(env, 2), vote="reject")
    assert env.state.g.rejections == 4
    propose(env, good_members(env, 2))
    assert env.state.g.rejections == 0 and env.state.phase == "quest"


def _to_assassination(env):
    succeed_quests(env, 3)
    assert env.state.phase == "assassination_talk"


def test_three_successes_lead_to_the_assassination_heard_by_evil_only():
    env = new_env(num_players=7, oberon=True)
    _to_assassination(env)
    s = env.state
    assassin, = holders(env, ASSASSIN)
    evil = team(env, EVIL)
    assert env.agent_selection == assassin
    speakers = []
    while s.phase == "assassination_talk":
        speakers.append(env.agent_selection)
        env.step(f"say I think it is {s.name(team(env, GOOD)[0])}")
    assert sorted(speakers) == sorted(evil)          # Oberon too
    talk = [m for m in s.messages if m.sender and m.text.startswith("I think")]
    assert talk and all(set(m.receivers) == set(evil) for m in talk)
    for agent in team(env, GOOD):
        assert "I think it is" not in env.observe(agent)["text"]
    assert s.phase == "assassination" and env.agent_selection == assassin


def test_assassin_finds_merlin_evil_wins():
    env = new_env()
    _to_assassination(env)
    while env.state.phase == "assassination_talk":
        env.step("pass")
    merlin, = holders(env, MERLIN)
    env.step(f"assassinate {env.state.name(merlin)}")
    assert env.state.result.reason == "the Assassin found Merlin: evil wins"
    assert all(env.rewards[a] == (1.0 if env.state.team(a) == EVIL else -1.0) for a in env.possible_agents)
    assert env.episode_record()["metrics"]["merlin_found"] is True


def test_assassin_misses_merlin_good_wins():
    env = new_env()
    _to_assassination(env)
    while env.state.phase == "assassination_talk":
        env.step("pass")
    servant = holders(env, SERVANT)[0]
    env.step(f"assassinate {env.state.name(servant)}")
    assert env.state.result.reason == "the Assassin missed Merlin: good wins"
    assert all(env.rewards[a] == (1.0 if env.state.team(a) == GOOD else -1.0) for a in env.possible_agents)
    assert f"Merlin was {env.state.name(holders(env, MERLIN)[0])}." in env.episode_record()["transcript"][-2]


def test_without_merlin_three_successes_win_at_once():
    env = new_env(num_players=6, merlin=False)
    assert not holders(env, MERLIN) and not holders(env, ASSASSIN)
    succeed_quests(env, 3)
    assert env.state.result.reason == "3 quests succeeded: good wins"


# ------------------------------------------------------------------ role gaps, as for Resistance
def test_role_gaps_put_every_good_seat_on_main_and_every_evil_seat_on_alt():
    """The leaderboard's role-conditioned ratings and SPaRTan's sides read main_role/alt_role;
    special roles count with their team, whatever the configuration deals."""
    from socialgym_benchmarks.leaderboard.summary import is_hidden_role, side_label
    from socialgym_benchmarks.studies.spartan.sides import game_sides

    info = socialgym_env.game_class("avalon").info.to_dict()
    assert is_hidden_role(info)
    label = side_label(info)
    env = new_env(num_players=10, **ALL_ROLES)
    for seat in env.state.seats:
        side = label({"role": seat.role, "team": seat.team, "policy": "p"})
        assert side == ("p|main" if seat.team == GOOD else "p|alt"), seat.role
    assert game_sides("avalon").teams == {"main": GOOD, "alt": EVIL}
