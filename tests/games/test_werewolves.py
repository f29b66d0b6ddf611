"""Rule tests for Werewolves, played through the env with scripted moves.

Seed 0 deals: player_0 Yusuf (Villager), player_1 Björn (Werewolf), player_2 Chidi (Werewolf),
player_3 Quinn (Villager), player_4 Cyrus (Seer), player_5 Bea (Witch).
"""
import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.werewolves import night_deaths

P = [f"player_{i}" for i in range(6)]
WOLVES = ["player_1", "player_2"]
ROLE_WORDS = ("Werewolf", "Seer", "Witch", "Villager")


def new_env(**config):
    env = socialgym_env.make("werewolves", invalid_action="raise", **config)
    env.reset(seed=0)
    s = env.state
    assert [s.name(a) for a in P] == ["Yusuf", "Björn", "Chidi", "Quinn", "Cyrus", "Bea"]
    assert [s.role(a) for a in P] == ["Villager", "Werewolf", "Werewolf", "Villager", "Seer", "Witch"]
    return env


def step(env, agent, action):
    assert env.agent_selection == agent, (env.agent_selection, agent, env.state.phase)
    env.step(action)


def night(env, kills, inspect=None, witch="pass", talk=("pass", "pass")):
    """kills: {wolf: target name}; inspect: target name for the Seer (if alive); witch action."""
    for wolf, line in zip([w for w in WOLVES if env.state.seat[w].alive], talk):
        step(env, wolf, line)
    for wolf, target in kills.items():
        step(env, wolf, f"kill {target}")
    if inspect is not None:
        step(env, "player_4", f"inspect {inspect}")
    if witch is not None:
        step(env, "player_5", witch)


def day(env, votes, talk=None):
    """votes: {agent: "vote NAME" / "abstain"} in seat order; everyone passes the talk."""
    while env.state.phase == "day_talk":
        step(env, env.agent_selection, "pass")
    for agent, action in votes.items():
        step(env, agent, action)


def lines(env):
    return env.episode_record()["transcript"]


def seen_by(env, agent):
    return [m.text for m in env.state.visible_to(agent)]


def test_night_deaths_rule():
    assert night_deaths("a", saved=False, poisoned=None) == ["a"]
    assert night_deaths("a", saved=True, poisoned=None) == []
    assert night_deaths("a", saved=False, poisoned="b") == ["a", "b"]
    assert night_deaths("a", saved=False, poisoned="a") == ["a"]


def test_night_talk_and_kill_votes_reach_only_the_werewolves():
    env = new_env()
    assert lines(env) == ["[R1 night_talk] Moderator: Night 1 falls. Everyone closes their eyes."]
    step(env, "player_1", "say Let's take Yusuf.")
    step(env, "player_2", "say I prefer Quinn.")
    step(env, "player_1", "kill Yusuf")
    step(env, "player_2", "kill Quinn")
    wolf_only = ["The Werewolves are Björn, Chidi.", "Let's take Yusuf.", "I prefer Quinn.",
                 "Kill votes: Björn → Yusuf; Chidi → Quinn.",
                 "Tie between Yusuf, Quinn: broken at random, Yusuf is chosen.",
                 "The Werewolves attack Yusuf tonight."]
    for agent in P:
        seen = seen_by(env, agent)
        text = env.observe(agent)["text"]
        for line in wolf_only:
            if agent in WOLVES:
                assert line in seen
            else:
                assert line not in seen and line not in text
    assert "[R1 night_talk] Björn (team only): Let's take Yusuf." in env.observe("player_2")["text"]
    assert env.state.g.victim == "player_0"
    # the kill grammar offers only live non-Werewolves
    env2 = new_env()
    step(env2, "player_1", "pass")
    step(env2, "player_2", "pass")
    assert env2.infos["player_1"]["legal_action_list"] == ["kill Yusuf", "kill Quinn", "kill Cyrus", "kill Bea"]
    with pytest.raises(InvalidActionError):
        env2.step("kill Chidi")


def test_seer_result_reaches_only_the_seer_and_witch_alone_learns_the_victim():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Björn", witch=None)
    assert env.state.phase == "witch"
    for agent in P:
        seen = seen_by(env, agent)
        assert ("Björn is a Werewolf." in seen) == (agent == "player_4")
        assert ("Tonight the Werewolves attacked Yusuf." in seen) == (agent == "player_5")
        if agent in ("player_0", "player_3", "player_4"):
            assert "Yusuf" not in " ".join(m.text for m in env.state.visible_to(agent) if m.visibility != "public")
    assert "Björn is a Werewolf." in env.observe("player_4")["text"]
    assert env.game.public_data(env.state, "player_4")["inspections"] == {"player_1": True}
    assert "inspections" not in env.game.public_data(env.state, "player_0")
    assert env.game.public_data(env.state, "player_5")["victim"] == "player_0"
    assert env.game.public_data(env.state, "player_0").get("victim") is None
    step(env, "player_5", "pass")
    assert lines(env)[-1] == "[R1 witch] Moderator: Day 1 dawns: Yusuf was found dead."


def test_seer_answers_not_a_werewolf():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn")
    assert "Quinn is not a Werewolf." in seen_by(env, "player_4")


def test_witch_save_once_per_game_and_one_potion_a_night():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn", witch=None)
    assert env.infos["player_5"]["action_types"] == ["save", "poison", "pass"]
    with pytest.raises(InvalidActionError):
        env.step("save poison Björn")      # at most one potion a night
    step(env, "player_5", "save")
    assert "[R1 witch] Moderator: Day 1 dawns: nobody died during the night." in lines(env)
    assert env.state.seat["player_0"].alive
    day(env, {a: "abstain" for a in P})
    night(env, {"player_1": "Quinn", "player_2": "Quinn"}, inspect="Bea", witch=None)
    assert env.infos["player_5"]["action_types"] == ["poison", "pass"]
    with pytest.raises(InvalidActionError):
        env.step("save")
    step(env, "player_5", "poison Björn")
    assert "[R2 witch] Moderator: Day 2 dawns: Björn and Quinn were found dead." in lines(env)
    assert env.episode_record()["metrics"]["saves"] == 1
    day(env, {a: "abstain" for a in ("player_0", "player_2", "player_4", "player_5")})
    night(env, {"player_2": "Yusuf"}, inspect="Chidi", witch=None, talk=("pass",))
    assert env.infos["player_5"]["action_types"] == ["pass"]
    with pytest.raises(InvalidActionError):
        env.step("poison Chidi")


def test_day_vote_tie_exiles_nobody():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn")
    assert [env.agent_selection] == ["player_1"]      # day 1 talk starts at the first live seat
    day(env, {"player_1": "vote Quinn", "player_2": "vote Cyrus", "player_3": "vote Cyrus",
              "player_4": "vote Quinn", "player_5": "abstain"})
    assert lines(env)[-4:] == [
        "[R1 day_vote] Moderator: Votes: Björn → Quinn; Chidi → Cyrus; Quinn → Cyrus; Cyrus → Quinn; Bea → nobody.",
        "[R1 day_vote] Moderator: Tie between Quinn, Cyrus: nobody is chosen.",
        "[R1 day_vote] Moderator: Nobody is exiled today.",
        "[R2 night_talk] Moderator: Night 2 falls. Everyone closes their eyes."]
    assert all(env.state.seat[a].alive for a in P[1:])
    assert env.state.phase == "night_talk" and env.state.round == 2


def test_abstention_is_a_candidate_one_vote_among_abstentions_exiles_nobody():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn")
    day(env, {"player_1": "vote Quinn", "player_2": "abstain", "player_3": "abstain",
              "player_4": "abstain", "player_5": "abstain"})
    assert lines(env)[-3:-1] == [
        "[R1 day_vote] Moderator: Abstention has 4 of 5 votes, as many as anyone or more: nobody is chosen.",
        "[R1 day_vote] Moderator: Nobody is exiled today."]
    assert env.state.seat["player_3"].alive


def test_abstention_tying_the_plurality_exiles_nobody():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn")
    day(env, {"player_1": "vote Quinn", "player_2": "vote Quinn", "player_3": "abstain",
              "player_4": "abstain", "player_5": "vote Chidi"})
    assert "[R1 day_vote] Moderator: Abstention has 2 of 5 votes, as many as anyone or more: nobody is chosen." \
        in lines(env)
    assert env.state.seat["player_3"].alive


def test_exiled_role_is_not_revealed_and_village_wins_when_no_werewolf_lives():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Björn", witch="poison Björn")
    assert "[R1 witch] Moderator: Day 1 dawns: Yusuf and Björn were found dead." in lines(env)
    day(env, {"player_2": "vote Quinn", "player_3": "vote Chidi", "player_4": "vote Chidi", "player_5": "vote Chidi"})
    record = env.episode_record()
    assert "[R1 day_vote] Moderator: Chidi is exiled. Their role is not revealed." in record["transcript"]
    day_lines = [l for l in record["transcript"] if "Moderator:" in l and "[R1 " in l and "Game over" not in l]
    assert not any(word in l for l in day_lines for word in ROLE_WORDS)
    assert record["reason"] == "no Werewolf is alive: the village wins"
    assert record["rewards"] == {"player_0": 1.0, "player_1": -1.0, "player_2": -1.0, "player_3": 1.0,
                                 "player_4": 1.0, "player_5": 1.0}
    assert record["winners"] == ["player_0", "player_3", "player_4", "player_5"]


def test_werewolves_win_when_as_many_as_the_village():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn")
    day(env, {"player_1": "vote Quinn", "player_2": "vote Quinn", "player_3": "vote Björn",
              "player_4": "vote Björn", "player_5": "vote Quinn"})
    record = env.episode_record()
    assert "[R1 day_vote] Moderator: Quinn is exiled. Their role is not revealed." in record["transcript"]
    assert record["reason"] == "the Werewolves are at least as many as the village: the Werewolves win"
    assert record["rewards"] == {"player_0": -1.0, "player_1": 1.0, "player_2": 1.0, "player_3": -1.0,
                                 "player_4": -1.0, "player_5": -1.0}


def test_werewolves_can_win_at_night():
    env = new_env()
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn")
    day(env, {a: "abstain" for a in P[1:]})
    night(env, {"player_1": "Quinn", "player_2": "Quinn"}, inspect="Bea", witch="poison Cyrus")
    record = env.episode_record()
    assert "[R2 witch] Moderator: Day 2 dawns: Quinn and Cyrus were found dead." in record["transcript"]
    assert record["reason"] == "the Werewolves are at least as many as the village: the Werewolves win"
    assert env.terminations["player_0"] and not env.truncations["player_0"]


def test_cycle_cap_is_a_draw_by_truncation():
    env = new_env(max_cycles=1)
    night(env, {"player_1": "Yusuf", "player_2": "Yusuf"}, inspect="Quinn", witch="save")
    day(env, {a: "abstain" for a in P})
    record = env.episode_record()
    assert record["reason"] == "1 day-night cycles played: draw"
    assert record["truncated"] is True
    assert record["rewards"] == {a: 0.0 for a in P}
    assert all(env.truncations.values()) and not any(env.terminations.values())


def test_default_cap_is_ten_cycles_and_the_step_cap_is_a_draw():
    assert socialgym_env.make("werewolves").config["max_cycles"] == 10
    env = new_env(max_steps=3)
    step(env, "player_1", "pass")
    step(env, "player_2", "pass")
    step(env, "player_1", "kill Yusuf")
    assert env.state.result.reason == "turn cap reached: draw" and env.state.result.truncated
