"""Rule tests for Skull, played through the env."""
import json

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.game import WINNER_TAKE_ALL

from helpers import assert_random_play_pays_winner_take_all

P0, P1, P2, P3 = "player_0", "player_1", "player_2", "player_3"


def new_env(seed=1, **config):
    config.setdefault("invalid_action", "raise")
    env = socialgym_env.make("skull", **config)
    env.reset(seed=seed)
    return env


def act(env, agent, action):
    assert env.agent_selection == agent, f"expected {agent} to act, not {env.agent_selection}"
    env.step(action)


def lines(env):
    return env.episode_record()["transcript"]


def N(env, agent):
    return env.state.name(agent)


def place_round(env, discs):
    """Each player in seat order from the current one places the given disc."""
    for agent, disc in discs:
        act(env, agent, f"place {disc}")


def test_metadata():
    info = socialgym_env.game_class("skull").info
    assert (info.category, info.information, info.communication) == ("bluffing", "hidden_state", "none")
    assert info.skills == ("deception", "tom") and info.outcome == WINNER_TAKE_ALL
    assert info.horizon == "open_ended" and info.num_players == 4 and info.max_steps == 200


def test_first_placement_round_before_any_bid():
    env = new_env()
    assert env.state.g.hands == {a: {"flower": 3, "skull": 1} for a in env.agents}
    assert env.infos[P0]["action_types"] == ["place"]
    act(env, P0, "place flower")
    with pytest.raises(InvalidActionError):
        env.step("bid 1")                     # P1 has not placed yet
    place_round(env, [(P1, "skull"), (P2, "flower")])
    assert env.infos[P3]["action_types"] == ["place"]
    act(env, P3, "place flower")
    assert env.infos[P0]["action_types"] == ["place", "bid"]
    assert lines(env)[1:5] == [f"[R1 place] Moderator: {N(env, a)} places a disc (stack of 1)." for a in (P0, P1, P2, P3)]


def test_bid_bounds():
    env = new_env()
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "flower"), (P3, "flower")])
    for bad in ("bid 0", "bid 5", "bid -1"):
        with pytest.raises(InvalidActionError):
            env.step(bad)
    act(env, P0, "bid 2")
    with pytest.raises(InvalidActionError):
        env.step("bid 2")                     # must raise
    with pytest.raises(InvalidActionError):
        env.step("bid 5")                     # only 4 discs on the table
    act(env, P1, "bid 3")
    assert env.state.phase == "bidding" and env.state.g.bid == 3


def test_empty_hand_must_bid():
    env = new_env()
    for _ in range(4):
        for agent, disc in ((P0, "flower"), (P1, "flower"), (P2, "flower"), (P3, "flower")):
            if env.state.g.hands[agent]["flower"] == 0:
                disc = "skull"
            act(env, agent, f"place {disc}")
    assert env.state.g.hands[P0] == {"flower": 0, "skull": 0}
    assert env.infos[P0]["action_types"] == ["bid"]
    with pytest.raises(InvalidActionError):
        env.step("place flower")
    act(env, P0, "bid 3")


def test_passed_players_are_skipped_not_stepped():
    env = new_env()
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "flower"), (P3, "flower")])
    act(env, P0, "bid 1")
    act(env, P1, "pass")
    act(env, P2, "bid 2")
    act(env, P3, "pass")
    steps_before = env.state.step
    act(env, P0, "bid 3")                     # P1 and P3 passed: P2 answers next
    assert env.agent_selection == P2 and env.state.step == steps_before + 1
    act(env, P2, "pass")                      # only P0 is left: its attempt starts at once
    assert env.state.g.bidder == P0 and env.state.phase == "flip"
    assert lines(env)[-3:] == [f"[R1 bidding] Moderator: {N(env, P2)} passes.",
                                 f"[R1 bidding] Moderator: {N(env, P0)} must turn 3 discs, starting with its own stack.",
                                 f"[R1 bidding] Moderator: {N(env, P0)} turns its own disc: a flower (1 of 3)."]


def test_own_stack_flipped_first_automatically_then_flip_one_top_disc():
    env = new_env()
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "skull"), (P3, "flower")])
    act(env, P0, "place flower")              # P0: two flowers
    act(env, P1, "place flower")              # P1: flower, flower
    act(env, P2, "bid 4")
    act(env, P3, "pass")
    act(env, P0, "bid 5")
    act(env, P1, "pass")
    act(env, P2, "pass")                      # P0 must turn 5 of 6
    assert lines(env)[-3:] == [f"[R1 bidding] Moderator: {N(env, P0)} must turn 5 discs, starting with its own stack.",
                               f"[R1 bidding] Moderator: {N(env, P0)} turns its own disc: a flower (1 of 5).",
                               f"[R1 bidding] Moderator: {N(env, P0)} turns its own disc: a flower (2 of 5)."]
    assert env.state.g.face_down == {P0: 0, P1: 2, P2: 1, P3: 1}
    assert env.agent_selection == P0 and env.infos[P0]["action_types"] == ["flip"]
    act(env, P0, f"flip {N(env, P1)}")
    assert env.state.g.face_down[P1] == 1 and env.state.g.flowers == 3
    assert lines(env)[-1] == f"[R1 flip] Moderator: {N(env, P0)} turns {N(env, P1)}'s disc: a flower (3 of 5)."


def test_empty_or_unknown_flip_target_is_invalid_and_never_stalls():
    env = new_env()
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "flower"), (P3, "flower")])
    act(env, P0, "bid 3")
    act(env, P1, "pass")
    act(env, P2, "pass")
    act(env, P3, "pass")
    act(env, P0, f"flip {N(env, P1)}")
    with pytest.raises(InvalidActionError, match="stack has no face-down discs left"):
        env.step(f"flip {N(env, P1)}")        # now empty
    with pytest.raises(InvalidActionError):
        env.step("flip Nobody")
    with pytest.raises(InvalidActionError):
        env.step(f"flip {N(env, P0)}")        # its own stack is turned automatically
    # in fallback mode the invalid target is recorded with its reason and a legal stack is turned
    env2 = new_env(invalid_action="fallback")
    for a in (P0, P1, P2, P3):
        env2.step("place flower")
    env2.step("bid 3")
    for _ in range(3):
        env2.step("pass")
    env2.step(f"flip {N(env2, P1)}")
    env2.step(f"flip {N(env2, P1)}")
    assert env2.infos[P0]["invalid_action"]["reason"] == f"{N(env2, P1)}'s stack has no face-down discs left"
    assert env2.state.result is not None          # the fallback turned the third flower: P0 wins
    assert env2.rewards[P0] == 1.0


def test_skull_costs_bidder_a_random_disc_and_bidder_starts_next_round():
    env = new_env()
    place_round(env, [(P0, "flower"), (P1, "skull"), (P2, "flower"), (P3, "flower")])
    act(env, P0, "bid 2")
    for a in (P1, P2, P3):
        act(env, a, "pass")
    act(env, P0, f"flip {N(env, P1)}")
    assert lines(env)[-3:] == [f"[R1 flip] Moderator: {N(env, P0)} turns {N(env, P1)}'s disc: a SKULL.",
                               f"[R1 flip] Moderator: {N(env, P0)} loses a disc at random (3 left).",
                               f"[R2 flip] Moderator: Round 2: discs per player: {N(env, P0)} 3, {N(env, P1)} 4, "
                               f"{N(env, P2)} 4, {N(env, P3)} 4. {N(env, P0)} places first."]
    hands = env.state.g.hands
    assert sum(hands[P0].values()) == 3 and all(hands[a] == {"flower": 3, "skull": 1} for a in (P1, P2, P3))
    lost = [m for m in env.state.messages if m.visibility == "private"]
    assert len(lost) == 1 and lost[0].receivers == (P0,)
    kind = "flower" if hands[P0]["flower"] == 2 else "skull"
    assert lost[0].text == f"You lost a {kind}."
    assert all(not s for s in env.state.g.stacks.values())
    assert env.agent_selection == P0 and env.infos[P0]["action_types"] == ["place"]


def test_n_flowers_win_the_game():
    env = new_env()
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "skull"), (P3, "flower")])
    act(env, P0, "bid 2")
    act(env, P1, "bid 3")
    for a in (P2, P3, P0):
        act(env, a, "pass")
    act(env, P1, f"flip {N(env, P0)}")
    act(env, P1, f"flip {N(env, P3)}")
    assert env.state.result.reason == f"{N(env, P1)} turned 3 flowers and wins"
    assert env.rewards == {P0: -1.0, P1: 1.0, P2: -1.0, P3: -1.0}
    assert all(env.terminations.values())


def test_elimination_at_zero_discs_and_last_player_with_discs_wins():
    env = new_env(num_players=3)
    g = env.state.g
    g.hands[P0] = {"flower": 1, "skull": 0}
    g.hands[P1] = {"flower": 1, "skull": 0}
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "skull")])
    act(env, P0, "bid 3")                     # every disc: the attempt starts at once
    act(env, P0, f"flip {N(env, P1)}")
    act(env, P0, f"flip {N(env, P2)}")        # skull: P0 loses its only disc
    assert not env.state.seat[P0].alive
    assert f"[R1 flip] Moderator: {N(env, P0)} has no discs left and is out." in lines(env)
    assert env.agent_selection == P1          # the next live player starts
    act(env, P1, "place flower")
    act(env, P2, "place skull")
    act(env, P1, "bid 2")                     # turns its own flower, then must flip P2's skull
    act(env, P1, f"flip {N(env, P2)}")
    assert env.state.result.reason == f"{N(env, P2)} is the last player with discs"
    assert env.rewards == {P0: -1.0, P1: -1.0, P2: 1.0}


def test_cap_is_a_draw_for_all():
    env = new_env(max_steps=3)
    place_round(env, [(P0, "flower"), (P1, "flower"), (P2, "flower")])
    assert env.state.result.truncated and env.state.result.reason == "turn cap reached: draw"
    assert env.rewards == {a: 0.0 for a in env.possible_agents}
    assert all(env.truncations.values())
    assert all(env.infos[a]["outcome"] == "draw" for a in env.possible_agents)


def test_no_other_players_discs_visible():
    env = new_env()
    place_round(env, [(P0, "skull"), (P1, "flower"), (P2, "flower"), (P3, "skull")])
    act(env, P0, "place flower")
    for agent in env.agents:
        text = env.observe(agent)["text"]
        view = env.decision_view(agent)
        own_stack = ", ".join(env.state.g.stacks[agent])
        assert f"Your stack (bottom to top): {own_stack}." in text
        assert view["game_state"]["my_stack"] == env.state.g.stacks[agent]
        for other in env.agents:
            if other == agent:
                continue
            h = env.state.g.hands[other]
            # what the other holds and placed appears nowhere in this seat's view
            assert f"Your hand: {h['flower']} flower(s), {h['skull']} skull(s)." not in text or \
                h == env.state.g.hands[agent]
            assert "skull" not in " ".join(m.text for m in env.state.visible_to(agent)).lower()
        public = json.dumps(view["game_state"])
        assert public.count("skull") == (1 if "my_hand" in view["game_state"] else 0) + \
            env.state.g.stacks[agent].count("skull")
    # placements never say which disc was placed
    assert all("flower" not in line and "skull" not in line.lower() for line in lines(env))


# ------------------------------------------------------------------ random play
# PettingZoo's API and seed tests and the generic random-play checks run for every game in
# tests/test_conformance.py; this adds the winner-take-all payout over more seeds.
def test_random_and_junk_play_ends_within_the_cap_and_pays_winner_take_all():
    assert_random_play_pays_winner_take_all("skull", range(40))
