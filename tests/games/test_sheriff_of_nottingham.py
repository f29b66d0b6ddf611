"""Sheriff of Nottingham: exact payoffs, rotation, phases and visibility."""
import json

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.sheriff_of_nottingham import bag_payoff

from helpers import finish_dead, play, public_lines, random_junk_episode

GAME = "sheriff_of_nottingham"
# Seed 0: Yusuf, Björn, Chidi, Quinn are player_0..3.
TALK = ["pass"] * 4


def round_moves(packs, decisions):
    """packs: the merchants' pack actions in seat order; decisions: the sheriff's decisions."""
    return list(packs) + TALK + list(decisions)


# Round 1 (sheriff Yusuf/p0), round 2 (Björn/p1), round 3 (Chidi/p2), round 4 (Quinn/p3).
R1 = round_moves(["honest", "smuggle", "honest"], ["inspect player_1", "inspect player_2", "pass player_3"])
R2 = round_moves(["smuggle", "smuggle", "honest"], ["pass player_0", "pass player_2", "inspect player_3"])
R3 = round_moves(["honest", "honest", "honest"], ["pass player_0", "pass player_1", "pass player_3"])
R4 = round_moves(["honest", "smuggle", "smuggle"], ["inspect player_0", "inspect player_1", "pass player_2"])


def test_bag_payoff_table():
    assert bag_payoff("honest", "pass") == (3, 0)
    assert bag_payoff("smuggle", "pass") == (8, 0)
    assert bag_payoff("honest", "inspect") == (5, -2)
    assert bag_payoff("smuggle", "inspect") == (-4, 4)


def test_round_one_all_four_outcomes_exact_scores_and_lines():
    env = play(GAME, R1)
    s = env.state
    # inspected honest (Björn +5, Yusuf −2); inspected smuggler (Chidi −4, Yusuf +4); passed honest +3
    assert s.scores == {"player_0": 2.0, "player_1": 5.0, "player_2": -4.0, "player_3": 3.0}
    assert public_lines(env)[2:] == [
        "[R1 pack] Moderator: All bags are packed.",
        "[R1 inspect] Moderator: Sheriff Yusuf inspects Björn's bag: honest goods. Björn +5, Yusuf −2.",
        "[R1 inspect] Moderator: Sheriff Yusuf inspects Chidi's bag: smuggled contraband. Chidi −4, Yusuf +4.",
        "[R1 inspect] Moderator: Sheriff Yusuf lets Quinn's bag pass unopened.",
        "[R2 pack] Moderator: Round 2: Björn is the sheriff; merchants: Yusuf, Chidi, Quinn."]
    # the passed merchant learns its payoff privately
    quinn_private = [m.text for m in s.messages if m.receivers == ("player_3",)]
    assert quinn_private == ["You packed honest goods this round (only you know this).",
                             "Your bag passed: honest goods, you earn +3."]


def test_full_game_rotation_totals_and_median_split():
    env = play(GAME, R1 + R2 + R3 + R4)
    s = env.state
    # passed smugglers +8 (round 2), all four payoff kinds, exact totals
    assert s.result.scores == {"player_0": 18.0, "player_1": 2.0, "player_2": 12.0, "player_3": 13.0}
    # median 12.5: above +1, below −1
    assert s.result.rewards == {"player_0": 1.0, "player_1": -1.0, "player_2": -1.0, "player_3": 1.0}
    sheriffs = [line for line in public_lines(env) if "is the sheriff" in line]
    assert [line.split("Moderator: ")[1].split(" is the")[0] for line in sheriffs] == [
        "Round 1: Yusuf", "Round 2: Björn", "Round 3: Chidi", "Round 4: Quinn"]
    assert public_lines(env)[-1] == ("[R4 inspect] Moderator: Game over: after 4 rounds the totals are "
                                     "Yusuf +18, Björn +2, Chidi +12, Quinn +13.")
    assert env.infos["player_0"]["outcome"] == "win" and env.infos["player_1"]["outcome"] == "loss"
    assert env.game.metrics(s) == {"smuggle_rate": 5 / 12, "inspect_rate": 5 / 12}
    finish_dead(env)


def test_equal_totals_are_draws_no_seat_order_tie_break():
    # every merchant honest and passed every round: everyone +9, all draw
    honest = ["honest"] * 3
    rounds = []
    for sheriff in range(4):
        merchants = [f"player_{i}" for i in range(4) if i != sheriff]
        rounds += round_moves(honest, [f"pass {m}" for m in merchants])
    env = play(GAME, rounds)
    assert env.state.result.scores == {a: 9.0 for a in env.state.agents}
    assert env.state.result.rewards == {a: 0.0 for a in env.state.agents}


def test_phase_order_actors_and_talk_round_robin_from_sheriff():
    env = play(GAME, [])
    assert env.state.phase == "pack" and env.pending_actors() == ["player_1", "player_2", "player_3"]
    for move in ["honest", "smuggle", "honest"]:
        env.step(move)
    assert env.state.phase == "negotiate"
    order = []
    for text in ["I will inspect everyone.", "Only apples here.", "Let me through for 2 gold.", "pass"]:
        order.append(env.agent_selection)
        env.step(f"say {text}" if text != "pass" else text)
    assert order == ["player_0", "player_1", "player_2", "player_3"]     # everyone once, sheriff first
    assert public_lines(env)[-3:] == ["[R1 negotiate] Yusuf: I will inspect everyone.",
                                      "[R1 negotiate] Björn: Only apples here.",
                                      "[R1 negotiate] Chidi: Let me through for 2 gold."]
    assert env.state.phase == "inspect" and env.agent_selection == "player_0"


def test_inspect_one_decision_per_merchant_any_order():
    env = play(GAME, ["honest", "honest", "smuggle"] + TALK)
    legal = env.infos["player_0"]["legal_action_list"]
    assert sorted(legal) == sorted(["inspect Björn", "inspect Chidi", "inspect Quinn",
                                    "pass Björn", "pass Chidi", "pass Quinn"])
    env.step("inspect Quinn")
    assert sorted(env.infos["player_0"]["legal_action_list"]) == sorted(
        ["inspect Björn", "inspect Chidi", "pass Björn", "pass Chidi"])
    with pytest.raises(InvalidActionError, match="NAME must be one of: Björn, Chidi"):
        env.step("pass Quinn")          # already decided
    with pytest.raises(InvalidActionError):
        env.step("inspect Yusuf")        # the sheriff is not a merchant
    env.step("pass Chidi")
    env.step("pass Björn")
    assert env.state.round == 2 and env.state.phase == "pack"
    assert env.state.scores == {"player_0": 4.0, "player_1": 3.0, "player_2": 3.0, "player_3": -4.0}


def test_invalid_fallbacks():
    env = socialgym_env.make(GAME)
    env.reset(seed=0)
    env.step("smuggle")
    env.step("bribe")                    # invalid pack → honest
    assert env.infos["player_2"]["invalid_action"]["reason"].startswith("unknown action type")
    env.step("honest")
    for _ in range(4):
        env.step("pass")
    env.step("arrest everyone")          # invalid inspect → pass the first undecided merchant
    assert public_lines(env)[-1] == "[R1 inspect] Moderator: Sheriff Yusuf lets Björn's bag pass unopened."
    assert env.state.scores["player_1"] == 8.0
    env.step("inspect player_2")
    assert env.state.scores["player_2"] == 5.0        # the fallback packed honest goods


def _views(env, agents):
    """Everything each agent can see now: observation text, infos, visible messages."""
    out = {}
    for a in agents:
        visible = [m.text for m in env.state.visible_to(a)]
        out[a] = (env.observe(a)["text"], json.dumps(env.infos[a], sort_keys=True, default=str), visible)
    return out


def _trace(chidi_pack, decisions_r1):
    env = socialgym_env.make(GAME, invalid_action="raise")
    env.reset(seed=0)
    moves = round_moves(["honest", chidi_pack, "smuggle"], decisions_r1) + R2 + R3 + R4
    others = ["player_0", "player_1", "player_3"]
    views = [_views(env, others)]
    for move in moves:
        env.step(move)
        views.append(_views(env, others))
    return env, views


def test_packing_is_private_and_passed_bags_stay_hidden():
    decisions = ["inspect player_1", "pass player_2", "inspect player_3"]
    env_h, honest = _trace("honest", decisions)
    env_s, smuggle = _trace("smuggle", decisions)
    # Chidi (player_2) packed differently; his bag was passed. Nobody else can tell, at any
    # step, until the final totals are announced at game over.
    assert honest[:-1] == smuggle[:-1]
    assert honest[-1] != smuggle[-1]
    assert env_h.state.scores["player_2"] + 5 == env_s.state.scores["player_2"]
    # Chidi's own view differs from the moment he packed
    assert "This round you packed smuggled contraband." in _chidi_after_pack("smuggle")
    assert "This round you packed honest goods." in _chidi_after_pack("honest")


def _chidi_after_pack(pack):
    env = play(GAME, ["honest", pack, "honest"])
    return env.observe("player_2")["text"]


def test_inspection_reveals_contents_to_everyone():
    decisions = ["pass player_1", "inspect player_2", "pass player_3"]
    env_h, honest = _trace("honest", decisions)
    env_s, smuggle = _trace("smuggle", decisions)
    first_diff = next(i for i, (h, s) in enumerate(zip(honest, smuggle)) if h != s)
    # identical through packing, talk and the first decision; differ right after the inspection
    assert first_diff == 3 + 4 + 2
    assert "Sheriff Yusuf inspects Chidi's bag: smuggled contraband." in smuggle[first_diff]["player_3"][0]
    # public data never carries another merchant's packing
    env = play(GAME, ["honest", "smuggle", "honest"])
    for viewer in ["player_0", "player_1", "player_3"]:
        pd = env.game.public_data(env.state, viewer)
        assert "smuggle" not in json.dumps(pd)
    assert env.game.public_data(env.state, "player_2")["my_packed"] == "smuggle"


def test_random_and_junk_play_ends_by_the_rules_within_40_steps():
    # the generic random-play checks, for every game, are in tests/test_conformance.py
    for seed in range(15):
        record = random_junk_episode(GAME, seed, ["junk !!"]).episode_record()
        assert record["finished"] and not record["truncated"] and record["steps"] <= 40, seed


def test_turn_cap_is_a_draw():
    env = play(GAME, ["honest", "smuggle", "honest"] + TALK + ["inspect player_1"], max_steps=8)
    assert env.state.scores["player_1"] == 5.0
    assert env.state.result.truncated and env.state.result.rewards == {a: 0.0 for a in env.state.agents}
