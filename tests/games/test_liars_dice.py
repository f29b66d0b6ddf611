"""Rule tests for Liar's Dice, played through the env."""
import json

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.liars_dice import bid_raises, challenge_loser, count_face
from socialgym_env.game import WINNER_TAKE_ALL

from helpers import assert_random_play_pays_winner_take_all

P0, P1, P2 = "player_0", "player_1", "player_2"
# reset(seed=1) rolls these dice in round 1 (read back in every test that relies on them)
SEED1_DICE = {P0: [4, 4, 4, 4, 6], P1: [1, 1, 2, 4, 4], P2: [1, 4, 4, 5, 6]}


def new_env(seed=1, **config):
    env = socialgym_env.make("liars_dice", invalid_action="raise", **config)
    env.reset(seed=seed)
    return env


def act(env, agent, action):
    assert env.agent_selection == agent, f"expected {agent} to act, not {env.agent_selection}"
    env.step(action)


def transcript(env):
    return env.episode_record()["transcript"]


def name(env, agent):
    return env.state.name(agent)


def test_metadata():
    info = socialgym_env.game_class("liars_dice").info
    assert (info.category, info.information, info.communication) == ("bluffing", "hidden_state", "structured")
    assert info.skills == ("deception", "probabilistic")
    assert info.outcome == WINNER_TAKE_ALL and info.horizon == "open_ended"
    assert info.num_players == 3 and info.max_steps == 200


def test_pure_rules():
    assert bid_raises((3, 4), None)
    assert bid_raises((4, 1), (3, 6)) and bid_raises((3, 5), (3, 4))
    assert not bid_raises((3, 4), (3, 4)) and not bid_raises((2, 6), (3, 4)) and not bid_raises((3, 3), (3, 4))
    dice = {P0: [1, 4, 4], P1: [4, 6]}
    assert count_face(dice, 4) == 3
    assert challenge_loser(dice, (3, 4), P0, P1) == P1      # count 3 >= 3: caller loses
    assert challenge_loser(dice, (4, 4), P0, P1) == P0      # count 3 < 4: bidder loses


def test_each_player_sees_own_dice_privately_before_first_bid():
    env = new_env()
    dice = env.state.g.dice
    assert dice == SEED1_DICE
    assert env.state.step == 0 and env.agent_selection == P0
    for agent in env.agents:
        private = [m for m in env.state.messages if m.visibility == "private" and agent in m.receivers]
        assert [m.text for m in private] == [f"Round 1: your dice are {' '.join(map(str, dice[agent]))}."]
        assert private[0].receivers == (agent,)
        assert f"Your dice (round 1): {' '.join(map(str, dice[agent]))}." in env.observe(agent)["text"]
    assert env.infos[P0]["game_state"]["my_dice"] == SEED1_DICE[P0]


def test_no_other_players_dice_visible():
    env = new_env()
    act(env, P0, "bid 2 4")
    act(env, P1, "bid 3 4")
    for agent in env.agents:
        text = env.observe(agent)["text"]
        visible = [m.text for m in env.state.visible_to(agent)]
        state_json = json.dumps(env.decision_view(agent)["game_state"])
        for other in env.agents:
            if other == agent:
                continue
            shown = " ".join(map(str, SEED1_DICE[other]))
            assert f"your dice are {shown}" not in " ".join(visible)
            assert f"Your dice (round 1): {shown}" not in text
            assert shown not in text and shown not in state_json
        assert env.decision_view(agent)["game_state"]["my_dice"] == SEED1_DICE[agent]
        infos_json = json.dumps(env.infos[agent])
        for other in env.agents:
            if other != agent:
                assert json.dumps(SEED1_DICE[other]) not in infos_json
                assert json.dumps(SEED1_DICE[other]) not in state_json
    # the only per-seat dice list anywhere in the structured view is the seat's own
    assert set(env.decision_view(P2)["game_state"]) >= {"my_dice"}
    assert not any(isinstance(v, dict) and P0 in v and isinstance(v[P0], list)
                   for v in env.decision_view(P2)["game_state"].values())


def test_bid_must_raise():
    env = new_env()
    act(env, P0, "bid 3 4")
    for bad in ("bid 3 4", "bid 2 6", "bid 3 3", "bid 16 1", "bid 0 2", "bid 3 7"):
        with pytest.raises(InvalidActionError):
            env.step(bad)
    act(env, P1, "bid 3 5")      # same quantity, higher face
    act(env, P2, "bid 4 1")      # higher quantity, any face
    assert transcript(env)[-3:] == [f"[R1 bid] Moderator: {name(env, P0)} bids 3 x 4.",
                                    f"[R1 bid] Moderator: {name(env, P1)} bids 3 x 5.",
                                    f"[R1 bid] Moderator: {name(env, P2)} bids 4 x 1."]


def test_liar_not_allowed_as_first_move():
    env = new_env()
    assert env.infos[P0]["action_types"] == ["bid"]
    with pytest.raises(InvalidActionError):
        env.step("liar")
    act(env, P0, "bid 1 1")
    assert env.infos[P1]["action_types"] == ["bid", "liar"]


def test_challenge_true_bid_caller_loses_a_die():
    env = new_env()
    assert count_face(env.state.g.dice, 4) == 8       # 4 + 2 + 2
    act(env, P0, "bid 8 4")
    act(env, P1, "liar")
    assert env.state.g.counts == {P0: 5, P1: 4, P2: 5}
    assert transcript(env)[-2] == (f"[R1 bid] Moderator: {name(env, P1)} calls liar on {name(env, P0)}'s bid of "
                                   f"8 x 4. There are 8 dice showing 4: the bid stands, {name(env, P1)} loses "
                                   f"a die (4 left).")
    # the loser (the caller) opens round 2 with fresh dice
    assert transcript(env)[-1] == (f"[R2 roll] Moderator: Round 2: dice are rolled ({name(env, P0)} 5, "
                                   f"{name(env, P1)} 4, {name(env, P2)} 5; 14 in play). {name(env, P1)} opens.")
    assert env.agent_selection == P1 and len(env.state.g.dice[P1]) == 4


def test_challenge_false_bid_bidder_loses_a_die_and_opens():
    env = new_env()
    act(env, P0, "bid 2 1")
    act(env, P1, "bid 9 4")        # only 8 fours
    act(env, P2, "liar")
    assert env.state.g.counts == {P0: 5, P1: 4, P2: 5}
    assert f"There are 8 dice showing 4: the bid was false, {name(env, P1)} loses a die (4 left)." in transcript(env)[-2]
    assert env.agent_selection == P1 and env.state.g.opener == P1
    assert env.state.g.bid is None


def test_turns_rotate_and_nobody_bids_twice_in_a_row():
    env = new_env()
    order = []
    for action in ("bid 1 2", "bid 1 3", "bid 1 4", "bid 1 5", "bid 1 6", "bid 2 1"):
        order.append(env.agent_selection)
        env.step(action)
    assert order == [P0, P1, P2, P0, P1, P2]
    assert all(a != b for a, b in zip(order, order[1:]))
    # a caller that loses its die opens the next round, with fresh dice (documented rule)
    caller = env.agent_selection
    env.step("liar")     # 2 x 1 with three 1s on the table: the caller P0 loses
    assert caller == P0 and env.state.g.counts[P0] == 4
    assert env.agent_selection == P0 and env.state.round == 2 and env.state.g.bid is None
    assert len(env.state.g.dice[P0]) == 4


def test_elimination_and_last_player_with_dice_wins():
    env = new_env(seed=1, dice=1)
    d = env.state.g.dice
    # one die each: bid a quantity of 3 on some face: false unless all three show it
    face = d[P0][0]
    act(env, P0, "bid 3 " + str(face))
    loser_first = P0 if count_face(d, face) < 3 else P1
    act(env, P1, "liar")
    assert env.state.g.counts[loser_first] == 0
    assert not env.state.seat[loser_first].alive
    assert f"[R1 bid] Moderator: {name(env, loser_first)} has no dice left and is out." in transcript(env)
    # an out loser cannot open: the next live player does
    assert env.agent_selection == env.state.next_alive(loser_first)
    opener = env.agent_selection
    other = [a for a in env.state.alive() if a != opener][0]
    d = env.state.g.dice
    act(env, opener, "bid 2 " + str(d[opener][0]))
    act(env, other, "liar")
    winner = other if count_face(d, d[opener][0]) < 2 else opener
    assert env.state.result is not None and not env.state.result.truncated
    assert env.rewards == {a: (1.0 if a == winner else -1.0) for a in env.possible_agents}
    assert env.state.result.reason == f"{name(env, winner)} is the last player with dice"
    assert env.infos[winner]["outcome"] == "win"


def test_cap_most_dice_win():
    env = new_env(max_steps=3)
    act(env, P0, "bid 9 4")
    act(env, P1, "liar")        # P0 loses a die: counts 4/5/5
    assert env.state.g.counts == {P0: 4, P1: 5, P2: 5}
    act(env, P0, "bid 1 1")     # step 3 = the cap
    assert env.state.result.truncated
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.rewards == {P0: -1.0, P1: 1.0, P2: 1.0}
    assert env.state.result.reason == f"turn cap reached: most dice (5) wins - {name(env, P1)}, {name(env, P2)}"


def test_invalid_action_fallback_is_liar_when_a_bid_stands():
    env = socialgym_env.make("liars_dice")
    env.reset(seed=1)
    env.step("bid 9 4")
    env.step("bananas")
    assert env.infos[P1]["invalid_action"]["raw"] == "bananas"
    assert env.state.g.counts[P0] == 4       # the fallback called liar on a false bid


# ------------------------------------------------------------------ random play
# PettingZoo's API and seed tests and the generic random-play checks run for every game in
# tests/test_conformance.py; this adds the winner-take-all payout over more seeds.
def test_random_and_junk_play_ends_within_the_cap_and_pays_winner_take_all():
    assert_random_play_pays_winner_take_all("liars_dice", range(40))
