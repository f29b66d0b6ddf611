"""Undercover: scripted rule tests with exact outcomes and transcript lines,
for both the default (roles known) and the classic (``roles_known=False``) variant."""
import re

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games.undercover import undercover_winner

from helpers import assert_turn_cap_is_a_draw, finish_dead, play, public_lines, votes

# Seed 1: Civilians Ines, Gael, Elif, Bea (player_0, 1, 2, 5) have "school"; Undercovers Quinn,
# Hiro (player_3, 4) have "kindergarten". Round 1 speakers: Quinn, Hiro, Bea, Ines, Gael, Elif.
SEED = 1
CIVILIANS_WIN = {"player_0": 1.0, "player_1": 1.0, "player_2": 1.0, "player_3": -1.0, "player_4": -1.0,
                 "player_5": 1.0}
UNDERCOVERS_WIN = {a: -r for a, r in CIVILIANS_WIN.items()}


def describe(n):
    return [f"say description {i}" for i in range(n)]


def test_setup_words_roles_and_order():
    env = play("undercover", [], seed=SEED)
    s = env.state
    assert [s.role(a) for a in s.agents] == ["Civilian"] * 3 + ["Undercover"] * 2 + ["Civilian"]
    assert [s.name(a) for a in s.agents] == ["Ines", "Gael", "Elif", "Quinn", "Hiro", "Bea"]
    assert s.g.words == {"Civilian": "school", "Undercover": "kindergarten"}
    assert public_lines(env) == ["[R1] Moderator: Round 1 of 6: descriptions start with Quinn."]
    assert env.pending_actors() == ["player_3"]


def test_roles_known_each_seat_sees_its_role_and_word_only():
    env = play("undercover", [], seed=SEED)
    for agent in env.agents:
        text = env.observe(agent)["text"]
        if env.state.role(agent) == "Undercover":
            assert "Your role: Undercover." in text
            assert ("You are an Undercover. Your word is kindergarten; the Civilians have a different, related "
                    "word. The other Undercover has your word; you do not know who it is.") in text
            assert not re.search(r"\bschool\b", text)
        else:
            assert "Your role: Civilian." in text and "You are a Civilian. Your word is school." in text
            assert not re.search(r"\bkindergarten\b", text)
        assert env.infos[agent]["role"] == env.state.role(agent)


def test_roles_unknown_variant_each_seat_sees_only_its_word():
    env = play("undercover", [], seed=SEED, roles_known=False)
    for agent in env.agents:
        text = env.observe(agent)["text"]
        word = "kindergarten" if env.state.role(agent) == "Undercover" else "school"
        other = "school" if word == "kindergarten" else "kindergarten"
        assert "Your role: unknown." in text
        assert f"- Your word is {word}." in text
        assert not re.search(rf"\b{other}\b", text)
        assert "You are a" not in text and "You are an" not in text
        assert (env.infos[agent]["role"], env.infos[agent]["team"]) == ("unknown", "")
        assert env.game.public_data(env.state, agent)["role"] is None
    # an Undercover's and a Civilian's observations differ only in the word (and name/id)
    u = env.observe("player_4")["text"].replace("kindergarten", "WORD").replace("Hiro (player_4)", "X")
    c = env.observe("player_0")["text"].replace("school", "WORD").replace("Ines (player_0)", "X")
    assert u == c
    # after the end everyone learns the truth
    env = play("undercover", describe(6) + votes("Quinn", "Quinn", "Quinn", "Ines", "Quinn", "Quinn")
               + describe(5) + votes("Hiro", "Hiro", "Hiro", "Ines", "Hiro"), seed=SEED, roles_known=False)
    assert env.state.result.rewards == CIVILIANS_WIN
    assert env.infos["player_3"]["role"] == "Undercover" and env.infos["player_0"]["role"] == "Civilian"


@pytest.mark.parametrize("roles_known", [True, False])
def test_both_undercovers_out_civilians_win(roles_known):
    moves = describe(6) + votes("Quinn", "Quinn", "Quinn", "Ines", "Quinn", "Quinn")
    env = play("undercover", moves, seed=SEED, roles_known=roles_known)
    assert public_lines(env)[-3:] == [
        "[R1 vote] Moderator: Votes: Ines → Quinn; Gael → Quinn; Elif → Quinn; Quinn → Ines; Hiro → Quinn; "
        "Bea → Quinn.",
        "[R1 vote] Moderator: Quinn is eliminated. Quinn was an Undercover.",
        "[R2 vote] Moderator: Round 2 of 6: descriptions start with Hiro."]
    assert env.pending_actors() == ["player_4"]
    for move in describe(5) + votes("Hiro", "Hiro", "Hiro", "Ines", "Hiro"):   # Quinn no longer votes
        env.step(move)
    assert public_lines(env)[-4:] == [
        "[R2 vote] Moderator: Votes: Ines → Hiro; Gael → Hiro; Elif → Hiro; Hiro → Ines; Bea → Hiro.",
        "[R2 vote] Moderator: Hiro is eliminated. Hiro was an Undercover.",
        "[R2 vote] Moderator: The Civilians' word was school; the Undercovers' word was kindergarten. "
        "Undercovers: Quinn, Hiro.",
        "[R2 vote] Moderator: Game over: both Undercovers were eliminated: the Civilians win."]
    assert env.state.result.rewards == CIVILIANS_WIN
    finish_dead(env)


@pytest.mark.parametrize("roles_known", [True, False])
def test_undercovers_win_when_no_longer_outnumbered(roles_known):
    moves = (describe(6) + votes("Gael", "Ines", "Ines", "Ines", "Ines", "Ines")
             + describe(5) + votes("Elif", "Gael", "Elif", "Elif", "Quinn"))
    env = play("undercover", moves, seed=SEED, roles_known=roles_known)
    assert [s.agent for s in env.state.seats if not s.alive] == ["player_0", "player_2"]
    assert public_lines(env)[-2:] == [
        "[R2 vote] Moderator: The Civilians' word was school; the Undercovers' word was kindergarten. "
        "Undercovers: Quinn, Hiro.",
        "[R2 vote] Moderator: Game over: the Undercovers are no longer outnumbered: the Undercovers win."]
    assert "[R1 vote] Moderator: Ines is eliminated. Ines was a Civilian." in public_lines(env)
    assert env.state.result.rewards == UNDERCOVERS_WIN


def test_undercover_survives_six_rounds():
    moves = describe(6) + votes("Quinn", "Quinn", "Quinn", "Ines", "Quinn", "Quinn")   # Quinn out
    tie = votes("Gael", "Elif", "Hiro", "Bea", "Ines")   # five voters, five targets: a tie
    for _ in range(5):
        moves += describe(5) + tie
    env = play("undercover", moves, seed=SEED)
    assert public_lines(env)[-4:] == [
        "[R6 vote] Moderator: Tie between Ines, Gael, Elif, Hiro, Bea: nobody is chosen.",
        "[R6 vote] Moderator: Nobody is eliminated.",
        "[R6 vote] Moderator: The Civilians' word was school; the Undercovers' word was kindergarten. "
        "Undercovers: Quinn, Hiro.",
        "[R6 vote] Moderator: Game over: an Undercover survived every round: the Undercovers win."]
    assert env.state.result.rewards == UNDERCOVERS_WIN
    assert env.state.round == 6


def test_description_order_rotates_and_skips_the_eliminated():
    env = play("undercover", describe(6) + votes("Quinn", "Quinn", "Quinn", "Ines", "Quinn", "Quinn"), seed=SEED)
    order = []
    for _ in range(5):
        order.append(env.agent_selection)
        env.step("pass")
    assert order == ["player_4", "player_5", "player_0", "player_1", "player_2"]
    assert env.pending_actors() == ["player_0", "player_1", "player_2", "player_4", "player_5"]
    with pytest.raises(InvalidActionError):
        env.step("vote Quinn")             # the eliminated are no candidates


def test_winner_rule():
    assert undercover_winner(0, 4, 2, 6) == "civilians"
    assert undercover_winner(2, 2, 2, 6) == "undercovers"
    assert undercover_winner(1, 3, 6, 6) == "undercovers"
    assert undercover_winner(1, 3, 5, 6) is None


def test_metadata():
    info = socialgym_env.game_class("undercover").info
    assert (info.main_role, info.alt_role, info.num_players, info.outcome) == ("Civilian", "Undercover", 6, "team")
    assert info.roles == (("Civilian", 4, "civilians"), ("Undercover", 2, "undercovers"))
    assert info.skills == ("deception", "persuasion", "tom")


def test_turn_cap_is_a_draw_safety_net():
    assert_turn_cap_is_a_draw("undercover", SEED)
