"""Chameleon: scripted rule tests with exact outcomes and transcript lines."""
import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.games import chameleon as chameleon_module
from socialgym_env.games.chameleon import guess_is_right, vote_outcome

from helpers import assert_turn_cap_is_a_draw, finish_dead, play, public_lines, votes

# Seed 1: Ines (player_0) is the Chameleon; the card is "Jobs", the secret word "chef";
# clues start with Quinn (player_3): order Quinn, Hiro, Ines, Gael, Elif.
SEED = 1
CLUES = ["clue kitchen", "clue recipe", "clue Jobs", "clue kitchen", "clue apron"]
TALK = ["say Ines gave a generic clue.", "pass", "say I am a Citizen!", "pass", "say Ines is odd."]
REWARD_CHAMELEON = {"player_0": 1.0, "player_1": -1.0, "player_2": -1.0, "player_3": -1.0, "player_4": -1.0}
REWARD_CITIZENS = {a: -r for a, r in REWARD_CHAMELEON.items()}


def test_setup_deals_card_roles_and_word():
    env = play("chameleon", [], seed=SEED)
    s = env.state
    assert [s.role(a) for a in s.agents] == ["Chameleon", "Citizen", "Citizen", "Citizen", "Citizen"]
    assert [s.name(a) for a in s.agents] == ["Ines", "Gael", "Elif", "Quinn", "Hiro"]
    assert (s.g.category, s.g.word, s.g.first) == ("Jobs", "chef", "player_3")
    assert len(s.g.words) == 16 and s.g.word in s.g.words
    assert public_lines(env) == [
        "[R1] Moderator: Topic card — Jobs: doctor, teacher, pilot, chef, farmer, lawyer, nurse, firefighter, "
        "plumber, baker, dentist, carpenter, journalist, astronaut, mechanic, artist.",
        "[R1] Moderator: Clues go round the table starting with Quinn."]
    assert env.agent_selection == "player_3"
    assert "The secret word is: chef." in env.observe("player_3")["text"]
    assert "You are the Chameleon: you do not know the secret word." in env.observe("player_0")["text"]


def test_clue_and_discussion_order_and_transcript():
    env = play("chameleon", CLUES + TALK, seed=SEED)
    lines = public_lines(env)
    assert lines[2:] == [
        "[R1 clue] Quinn: kitchen", "[R1 clue] Hiro: recipe", "[R1 clue] Ines: Jobs",
        "[R1 clue] Gael: kitchen", "[R1 clue] Elif: apron",
        "[R1 discussion] Quinn: Ines gave a generic clue.", "[R1 discussion] Ines: I am a Citizen!",
        "[R1 discussion] Elif: Ines is odd."]
    assert env.state.phase == "vote"
    assert env.state.g.clues == [("player_3", "kitchen"), ("player_4", "recipe"), ("player_0", "Jobs"),
                                 ("player_1", "kitchen"), ("player_2", "apron")]


def test_caught_chameleon_guesses_right_and_wins():
    env = play("chameleon", CLUES + TALK + votes("Gael", "Ines", "Ines", "Ines", "Elif") + ["guess Chef!"], seed=SEED)
    lines = public_lines(env)
    assert lines[-4:] == [
        "[R1 vote] Moderator: Votes: Ines → Gael; Gael → Ines; Elif → Ines; Quinn → Ines; Hiro → Elif.",
        "[R1 vote] Moderator: Ines is accused and is the Chameleon! Ines may now guess the secret word.",
        "[R1 guess] Moderator: Ines guesses 'Chef!'. The secret word was chef.",
        "[R1 guess] Moderator: Game over: the Chameleon was caught but guessed the secret word."]
    assert env.state.result.rewards == REWARD_CHAMELEON
    assert env.state.result.winners == ("player_0",)
    assert env.infos["player_0"]["outcome"] == "win" and env.infos["player_3"]["outcome"] == "loss"
    assert env.game.metrics(env.state) == {"caught": True, "guessed": True}
    finish_dead(env)


def test_caught_chameleon_guesses_wrong_and_citizens_win():
    env = play("chameleon", CLUES + TALK + votes("Gael", "Ines", "Ines", "Ines", "Ines") + ["guess baker"], seed=SEED)
    assert public_lines(env)[-2:] == [
        "[R1 guess] Moderator: Ines guesses 'baker'. The secret word was chef.",
        "[R1 guess] Moderator: Game over: the Chameleon was caught and guessed wrong: the Citizens win."]
    assert env.state.result.rewards == REWARD_CITIZENS
    assert env.state.result.winners == ("player_1", "player_2", "player_3", "player_4")
    assert env.game.metrics(env.state) == {"caught": True, "guessed": False}


def test_tied_vote_lets_the_chameleon_win():
    env = play("chameleon", CLUES + TALK + votes("Gael", "Ines", "Ines", "Gael", "Elif"), seed=SEED)
    assert public_lines(env)[-4:] == [
        "[R1 vote] Moderator: Votes: Ines → Gael; Gael → Ines; Elif → Ines; Quinn → Gael; Hiro → Elif.",
        "[R1 vote] Moderator: Tie between Ines, Gael: nobody is chosen.",
        "[R1 vote] Moderator: Nobody is accused. Ines was the Chameleon.",
        "[R1 vote] Moderator: Game over: the vote tied: the Chameleon escapes."]
    assert env.state.result.rewards == REWARD_CHAMELEON
    assert env.game.metrics(env.state) == {"caught": False, "guessed": False}


def test_wrong_accusation_lets_the_chameleon_win():
    env = play("chameleon", CLUES + TALK + votes("Hiro", "Hiro", "Hiro", "Ines", "Quinn"), seed=SEED)
    assert public_lines(env)[-3:] == [
        "[R1 vote] Moderator: Votes: Ines → Hiro; Gael → Hiro; Elif → Hiro; Quinn → Ines; Hiro → Quinn.",
        "[R1 vote] Moderator: Hiro is accused but was a Citizen. Ines was the Chameleon.",
        "[R1 vote] Moderator: Game over: a Citizen was accused: the Chameleon wins."]
    assert env.state.result.rewards == REWARD_CHAMELEON
    assert env.state.g.accused == "player_4"


def test_vote_is_simultaneous_and_blind():
    env = play("chameleon", CLUES + TALK + ["vote Gael"], seed=SEED)
    assert env.pending_actors() == ["player_1", "player_2", "player_3", "player_4"]
    assert not any("Gael" in line for line in public_lines(env)[-1:])
    assert "Votes:" not in env.observe("player_1")["text"]


def test_cannot_vote_for_oneself_or_give_two_word_clue():
    env = play("chameleon", CLUES + TALK, seed=SEED)
    with pytest.raises(InvalidActionError):
        env.step("vote Ines")   # player_0 is Ines
    env = play("chameleon", [], seed=SEED)
    with pytest.raises(InvalidActionError):
        env.step("clue hot kitchen")


def test_invalid_actions_fall_back():
    env = socialgym_env.make("chameleon")
    env.reset(seed=SEED)
    env.step("clue two words")                # invalid: a random filler word instead
    assert env.infos["player_3"]["invalid_action"]["reason"].startswith("unexpected text")
    assert env.state.g.clues[0][0] == "player_3" and " " not in env.state.g.clues[0][1]
    for move in CLUES[1:] + TALK + votes("Gael", "Ines", "Ines", "Ines", "Ines"):
        env.step(move)
    env.step("")                                 # invalid guess: a random card word
    assert env.state.g.guess in env.state.g.words
    assert env.state.result is not None


def test_guess_is_case_and_punctuation_insensitive():
    assert guess_is_right("CHEF.", "chef")
    assert guess_is_right("fire-fighter", "firefighter")
    assert guess_is_right("  Ice Cream! ", "ice-cream")
    assert not guess_is_right("chefs", "chef")
    assert not guess_is_right("!!!", "")
    assert vote_outcome(None, "a") == "tie" and vote_outcome("b", "a") == "wrong" and vote_outcome("a", "a") == "caught"


def _chameleon_views(monkeypatch, pick):
    """Play a fixed script with the secret word chosen by ``pick``; return every view of the
    Chameleon (observation text, infos, visible messages) after each step, and a Citizen's."""
    original = chameleon_module.draw_secret_word

    def draw(rng, words):
        original(rng, words)               # consume the RNG exactly as the real draw does
        return pick(words)

    monkeypatch.setattr(chameleon_module, "draw_secret_word", draw)
    env = socialgym_env.make("chameleon", invalid_action="raise")
    env.reset(seed=SEED)
    views, citizen = [], []
    script = CLUES + TALK + votes("Gael", "Ines", "Ines", "Ines", "Ines")
    for move in script:
        views.append((env.observe("player_0")["text"], repr(env.infos["player_0"]),
                      [m.text for m in env.state.visible_to("player_0")]))
        citizen.append(env.observe("player_3")["text"])
        env.step(move)
    return views, citizen, env


def test_secret_word_never_reaches_the_chameleon(monkeypatch):
    views_a, citizen_a, env_a = _chameleon_views(monkeypatch, lambda words: words[3])   # chef
    views_b, citizen_b, env_b = _chameleon_views(monkeypatch, lambda words: words[9])   # baker
    assert (env_a.state.g.word, env_b.state.g.word) == ("chef", "baker")
    assert views_a == views_b                # the Chameleon's view does not depend on the word
    assert citizen_a != citizen_b            # ... while a Citizen's does
    assert env_a.infos["player_0"]["game_state"]["secret_word"] is None
    for message in env_a.state.visible_to("player_0"):
        assert "secret word is" not in message.text


def test_metadata():
    info = socialgym_env.game_class("chameleon").info
    assert (info.category, info.information, info.communication, info.outcome) == \
        ("hidden_role", "hidden_roles", "free_form", "team")
    assert info.skills == ("deception", "persuasion", "tom")
    assert (info.main_role, info.alt_role, info.num_players) == ("Citizen", "Chameleon", 5)
    assert info.roles == (("Chameleon", 1, "chameleon"), ("Citizen", 4, "citizens"))


def test_turn_cap_is_a_draw_safety_net():
    assert_turn_cap_is_a_draw("chameleon", SEED)
