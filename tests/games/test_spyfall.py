"""Spyfall: scripted rule tests with exact outcomes and transcript lines."""
import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games import spyfall as spyfall_module
from socialgym_env.games.spyfall import match_location, spyfall_winner

from helpers import assert_turn_cap_is_a_draw, finish_dead, play, public_lines, votes

# Seed 1: Ines, Gael, Elif (player_0..2) are Non-Spies, Quinn (player_3) is the Spy; the location
# is the Farm; round 1 speakers: Quinn, Ines, Gael, Elif; round 2 starts with Ines.
SEED = 1
ROUND1 = ["say Ines, what do you do here?", "say I drive the tractor. Gael?", "say Lots of hay today.", "pass"]
SPY_WINS = {"player_0": -1.0, "player_1": -1.0, "player_2": -1.0, "player_3": 1.0}
NON_SPIES_WIN = {a: -r for a, r in SPY_WINS.items()}


def test_setup_location_roles_and_order():
    env = play("spyfall", [], seed=SEED)
    s = env.state
    assert [s.role(a) for a in s.agents] == ["Non-Spy", "Non-Spy", "Non-Spy", "Spy"]
    assert [s.name(a) for a in s.agents] == ["Ines", "Gael", "Elif", "Quinn"]
    assert s.g.location == "Farm"
    assert s.g.flavour == {"player_0": "Tractor Driver", "player_1": "Farmhand", "player_2": "Farmer"}
    assert public_lines(env) == ["[R1] Moderator: Round 1 of 4: questioning starts with Quinn."]
    assert env.pending_actors() == ["player_3"]
    ines = env.observe("player_0")["text"]
    assert "The location is: Farm." in ines and "Your role there: Tractor Driver." in ines
    spy = env.observe("player_3")["text"]
    assert "You are the Spy: you do not know the location." in spy
    assert "Possible locations: Airplane, Bank, Beach" in spy     # the Spy sees the full list
    assert len(spyfall_module.location_names()) >= 30


def test_spy_voted_out_round_one_non_spies_win():
    env = play("spyfall", ROUND1 + votes("Quinn", "Quinn", "Quinn", "Ines"), seed=SEED)
    assert public_lines(env)[1:] == [
        "[R1 questioning] Quinn: Ines, what do you do here?",
        "[R1 questioning] Ines: I drive the tractor. Gael?",
        "[R1 questioning] Gael: Lots of hay today.",
        "[R1 vote] Moderator: Votes: Ines → Quinn; Gael → Quinn; Elif → Quinn; Quinn → Ines.",
        "[R1 vote] Moderator: Quinn is eliminated. Quinn was a Spy.",
        "[R1 vote] Moderator: The location was Farm.",
        "[R1 vote] Moderator: Game over: the Spy was eliminated: the Non-Spies win."]
    assert env.state.result.rewards == NON_SPIES_WIN
    assert env.game.metrics(env.state) == {"spy_eliminated": True, "spy_guessed": None, "rounds": 1}
    finish_dead(env)


def test_exiled_non_spy_role_revealed_then_spy_no_longer_outnumbered():
    moves = ROUND1 + votes("Gael", "Elif", "Gael", "Gael")
    env = play("spyfall", moves, seed=SEED)
    assert public_lines(env)[-3:] == [
        "[R1 vote] Moderator: Votes: Ines → Gael; Gael → Elif; Elif → Gael; Quinn → Gael.",
        "[R1 vote] Moderator: Gael is eliminated. Gael was a Non-Spy.",
        "[R2 vote] Moderator: Round 2 of 4: questioning starts with Ines."]
    assert env.state.alive() == ["player_0", "player_2", "player_3"]
    assert env.pending_actors() == ["player_0"]
    # round 2: Ines, Elif, Quinn speak (Gael is out); then Ines goes: 1 Spy vs 1 Non-Spy.
    for move in ["say Elif, hay?", "say Yes, lots.", "pass"] + votes("Quinn", "Ines", "Ines"):
        env.step(move)
    assert public_lines(env)[-4:] == [
        "[R2 vote] Moderator: Votes: Ines → Quinn; Elif → Ines; Quinn → Ines.",
        "[R2 vote] Moderator: Ines is eliminated. Ines was a Non-Spy.",
        "[R2 vote] Moderator: Quinn was the Spy. The location was Farm.",
        "[R2 vote] Moderator: Game over: the Spy is no longer outnumbered: the Spy wins."]
    assert env.state.result.rewards == SPY_WINS


def test_ties_eliminate_nobody_and_the_spy_survives_four_rounds():
    env = play("spyfall", [], seed=SEED)
    firsts = []
    for round_no in range(1, 5):
        firsts.append(env.pending_actors()[0])
        for _ in range(4):
            env.step("pass")
        for move in votes("Gael", "Ines", "Quinn", "Elif"):
            env.step(move)
        assert "Tie between Ines, Gael, Elif, Quinn: nobody is chosen." in public_lines(env)[-3 if round_no < 4 else -4]
    assert firsts == ["player_3", "player_0", "player_1", "player_2"]   # the first speaker moves on
    assert public_lines(env)[-3:] == [
        "[R4 vote] Moderator: Nobody is eliminated.",
        "[R4 vote] Moderator: Quinn was the Spy. The location was Farm.",
        "[R4 vote] Moderator: Game over: the Spy survived every round: the Spy wins."]
    assert env.state.result.rewards == SPY_WINS
    assert env.state.round == 4 and env.state.step == 32


def test_rounds_config_changes_the_survival_limit():
    env = play("spyfall", ["pass"] * 4 + votes("Gael", "Ines", "Quinn", "Elif"), seed=SEED, rounds=1)
    assert env.state.result.reason == "the Spy survived every round: the Spy wins"


def test_spy_guess_variant_right_and_wrong():
    env = play("spyfall", ["guess farm!"], seed=SEED, spy_can_guess=True)
    assert public_lines(env)[-2:] == [
        "[R1 questioning] Moderator: Quinn reveals being the Spy and guesses the location: Farm. "
        "The location was Farm.",
        "[R1 questioning] Moderator: Game over: the Spy guessed the location."]
    assert env.state.result.rewards == SPY_WINS
    env = play("spyfall", ["guess Space-Station"], seed=SEED, spy_can_guess=True)
    assert env.state.result.reason == "the Spy guessed the location wrong: the Non-Spies win"
    assert env.state.result.rewards == NON_SPIES_WIN
    assert env.game.metrics(env.state)["spy_guessed"] == "Space Station"


def test_guess_only_for_the_spy_in_the_variant():
    env = play("spyfall", [], seed=SEED)              # variant off: no guess action
    with pytest.raises(InvalidActionError):
        env.step("guess Farm")
    env = play("spyfall", [], seed=SEED, spy_can_guess=True)
    with pytest.raises(InvalidActionError):
        env.step("guess Narnia")                       # not a location of the list
    env = play("spyfall", ["pass"], seed=SEED, spy_can_guess=True)
    assert env.agent_selection == "player_0"           # a Non-Spy cannot guess
    with pytest.raises(InvalidActionError):
        env.step("guess Farm")
    assert match_location("space station") == "Space Station" and match_location("Mars") is None


def test_winner_rule():
    assert spyfall_winner(0, 3, 1, 4) == "non_spies"
    assert spyfall_winner(1, 1, 2, 4) == "spy"
    assert spyfall_winner(1, 2, 4, 4) == "spy"
    assert spyfall_winner(1, 2, 3, 4) is None


def _spy_views(monkeypatch, index):
    original = spyfall_module.draw_location

    def draw(rng, bank):
        original(rng, bank)
        return bank[index]

    monkeypatch.setattr(spyfall_module, "draw_location", draw)
    env = socialgym_env.make("spyfall", invalid_action="raise", spy_can_guess=True)
    env.reset(seed=SEED)
    views, non_spy = [], []
    for move in ROUND1 + votes("Gael", "Elif", "Gael", "Gael") + ["pass"] * 3:
        views.append((env.observe("player_3")["text"], repr(env.infos["player_3"]),
                      [m.text for m in env.state.visible_to("player_3")]))
        non_spy.append(env.observe("player_0")["text"])
        env.step(move)
    return views, non_spy, env


def test_location_never_reaches_the_spy(monkeypatch):
    views_a, ns_a, env_a = _spy_views(monkeypatch, 0)
    views_b, ns_b, env_b = _spy_views(monkeypatch, 5)
    assert (env_a.state.g.location, env_b.state.g.location) == ("Airplane", "Circus Tent")
    assert views_a == views_b and ns_a != ns_b
    assert env_a.game.public_data(env_a.state, "player_3")["location"] is None
    assert env_a.game.public_data(env_a.state, "player_0")["location"] == "Airplane"


def test_invalid_talk_passes():
    env = socialgym_env.make("spyfall")
    env.reset(seed=SEED)
    env.step("say " + "x" * 700)
    assert env.infos["player_3"]["invalid_action"]["reason"].startswith("MESSAGE is longer")
    assert env.state.g.talk == [] and env.pending_actors() == ["player_0"]


def test_metadata():
    info = socialgym_env.game_class("spyfall").info
    assert (info.main_role, info.alt_role, info.num_players, info.outcome) == ("Non-Spy", "Spy", 4, "team")
    assert info.skills == ("deception", "persuasion", "tom")
    assert info.roles == (("Spy", 1, "spy"), ("Non-Spy", 3, "non_spies"))


def test_turn_cap_is_a_draw_safety_net():
    assert_turn_cap_is_a_draw("spyfall", SEED)
