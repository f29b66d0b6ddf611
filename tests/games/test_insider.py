"""Insider: the default Master's oracle, a pluggable Master, and scripted
rule tests for every ending with exact outcomes and transcript lines."""
import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError
from socialgym_env.games import insider as insider_module
from socialgym_env.games.insider import CANT, MASTERS, oracle_answer, read_answer, register_master, word_table

from helpers import assert_turn_cap_is_a_draw, finish_dead, play, public_lines

# Seed 1: Ines (player_0) is the Insider; the word is "harmonica" (musical instrument); turns
# start with Gael (player_1): Gael, Elif, Quinn, Hiro, Ines, Gael, ...
SEED = 1
QUESTIONS = ["ask Is it electric?", "ask Does it start with the letter H?", "ask What colour is it?",
             "guess harp", "ask Does it have 9 letters?"]
FOUND = QUESTIONS + ["guess HARMONICA!"]
TALK = ["say I found it.", "pass", "say Ines asked a sharp question.", "pass", "say Not me!"]
INSIDER_WINS = {"player_0": 1.0, "player_1": -1.0, "player_2": -1.0, "player_3": -1.0, "player_4": -1.0}
COMMONS_WIN = {a: -r for a, r in INSIDER_WINS.items()}


def entry(word):
    return next(e for e in word_table()["words"] if e["word"] == word)


# ---------------------------------------------------------------------- the oracle
@pytest.mark.parametrize("question, word, answer", [
    ("Is it an animal?", "dog", "yes"),
    ("is it a kind of food", "dog", "no"),
    ("Is it an instrument?", "harmonica", "yes"),
    ("Is it a piece of clothing?", "glove", "yes"),
    ("Is it alive?", "dog", "yes"),
    ("Is it edible?", "apple", "yes"),
    ("Can you eat it?", "car", "no"),
    ("Is it bigger than a breadbox?", "elephant", "yes"),
    ("Is it bigger than a breadbox?", "spoon", "no"),
    ("Is it man-made?", "bicycle", "yes"),
    ("Is it man made", "eagle", "no"),
    ("Does it use electricity?", "television", "yes"),
    ("Can it fly?", "airplane", "yes"),
    ("Is it found indoors?", "lamp", "yes"),
    ("Does it have legs?", "table", "yes"),
    ("Does it live in water?", "shark", "yes"),
    ("Is it round?", "drum", "yes"),
    ("Does it have wheels?", "bicycle", "yes"),
    ("Is it sweet?", "honey", "yes"),
    ("Does it start with B?", "banana", "yes"),
    ("Does the word begin with the letter c?", "banana", "no"),
    ("does it end with the letter a", "banana", "yes"),
    ("Does it have 6 letters?", "banana", "yes"),
    ("Does it have six letters?", "banana", "yes"),
    ("Is it 5 letters long?", "banana", "no"),
    ("Does it have more than 5 letters?", "banana", "yes"),
    ("Is it shorter than 4 letters?", "dog", "yes"),
    ("Does it contain the letter a?", "banana", "yes"),
    ("Does it contain z?", "banana", "no"),
    ("Is there an n in it?", "banana", "yes"),
    ("Does it have the letter q?", "banana", "no"),
    ("Is it a banana?", "banana", "yes"),
    ("Is it an apple?", "banana", "no"),
    ("What colour is it?", "banana", CANT),
    ("Is it a pet?", "dog", CANT),
    ("Does it have eyes?", "dog", CANT),   # "eyes" is never read as "yes"
    ("", "dog", CANT),
])
def test_oracle_answers(question, word, answer):
    assert oracle_answer(question, entry(word)) == answer


def test_read_answer_takes_the_first_word_only():
    assert read_answer("Yes, it is.") == "yes"
    assert read_answer("NO!") == "no"
    assert read_answer("eyes") == CANT
    assert read_answer("I think yes") == CANT
    assert read_answer(None) == CANT


# ---------------------------------------------------------------------- the game
def test_setup_category_public_word_to_the_insider_only():
    env = play("insider", [], seed=SEED)
    s = env.state
    assert [s.role(a) for a in s.agents] == ["Insider", "Common", "Common", "Common", "Common"]
    assert (s.g.word, s.g.category, s.g.asker) == ("harmonica", "musical instrument", "player_1")
    assert public_lines(env) == ["[R1] Moderator: The secret word is a musical instrument. Up to 15 questions "
                                 "or guesses, starting with Gael."]
    assert "You are the Insider. The secret word is: harmonica." in env.observe("player_0")["text"]
    for agent in ["player_1", "player_2", "player_3", "player_4"]:
        text = env.observe(agent)["text"]
        assert "harmonica" not in text and "You are a Common: you do not know the secret word." in text


def test_questions_answers_and_commons_catch_the_insider():
    env = play("insider", FOUND, seed=SEED)
    assert public_lines(env)[1:] == [
        "[R1 questions] Gael: Is it electric?", "[R1 questions] Moderator: Master: no.",
        "[R1 questions] Elif: Does it start with the letter H?", "[R1 questions] Moderator: Master: yes.",
        "[R1 questions] Quinn: What colour is it?", "[R1 questions] Moderator: Master: I can't answer that.",
        "[R1 questions] Hiro: My guess: harp", "[R1 questions] Moderator: Master: no, it is not harp.",
        "[R1 questions] Ines: Does it have 9 letters?", "[R1 questions] Moderator: Master: yes.",
        "[R1 questions] Gael: My guess: HARMONICA!",
        "[R1 questions] Moderator: Master: yes! Gael found the word: harmonica. Now find the Insider."]
    assert env.state.phase == "discussion" and env.pending_actors() == ["player_1"]
    for move in TALK + ["vote Gael", "vote Ines", "vote Ines", "vote Ines", "vote Ines"]:
        env.step(move)
    assert public_lines(env)[-6:] == [
        "[R1 discussion] Gael: I found it.", "[R1 discussion] Quinn: Ines asked a sharp question.",
        "[R1 discussion] Ines: Not me!",
        "[R1 vote] Moderator: Votes: Ines → Gael; Gael → Ines; Elif → Ines; Quinn → Ines; Hiro → Ines.",
        "[R1 vote] Moderator: Ines is accused and was the Insider!",
        "[R1 vote] Moderator: Game over: the Insider was caught: the Commons win."]
    assert env.state.result.rewards == COMMONS_WIN
    assert env.game.metrics(env.state) == {"guessed": True, "insider_caught": True, "questions_used": 6,
                                           "guessed_by_insider": False}
    finish_dead(env)


def test_wrong_accusation_insider_wins():
    env = play("insider", FOUND + TALK + ["vote Hiro", "vote Hiro", "vote Hiro", "vote Ines", "vote Gael"], seed=SEED)
    assert public_lines(env)[-2:] == [
        "[R1 vote] Moderator: Hiro is accused but was a Common. Ines was the Insider.",
        "[R1 vote] Moderator: Game over: a Common was accused: the Insider wins."]
    assert env.state.result.rewards == INSIDER_WINS


def test_tied_vote_insider_wins():
    env = play("insider", FOUND + TALK + ["vote Hiro", "vote Ines", "vote Hiro", "vote Ines", "vote Gael"], seed=SEED)
    assert public_lines(env)[-3:] == [
        "[R1 vote] Moderator: Tie between Ines, Hiro: nobody is chosen.",
        "[R1 vote] Moderator: Nobody is accused. Ines was the Insider.",
        "[R1 vote] Moderator: Game over: the vote tied: the Insider escapes."]
    assert env.state.result.rewards == INSIDER_WINS


def test_insider_may_guess_and_still_be_caught():
    env = play("insider", QUESTIONS[:4] + ["guess harmonica"] + TALK[:0], seed=SEED)
    assert env.state.g.guesser == "player_0" and env.pending_actors() == ["player_0"]
    for move in ["pass"] * 5 + ["vote Gael", "vote Ines", "vote Ines", "vote Gael", "vote Ines"]:
        env.step(move)
    assert env.state.result.rewards == COMMONS_WIN
    assert env.game.metrics(env.state)["guessed_by_insider"] is True


def test_nobody_guesses_in_time_everyone_loses():
    moves = [f"ask Does it have {n} letters?" for n in range(1, 15)]
    env = play("insider", moves, seed=SEED)
    assert env.state.result is None and env.game.public_data(env.state, "player_1")["questions_left"] == 1
    env.step("guess flute")
    assert public_lines(env)[-3:] == [
        "[R1 questions] Moderator: Master: no, it is not flute.",
        "[R1 questions] Moderator: Nobody found the word. It was harmonica; Ines was the Insider.",
        "[R1 questions] Moderator: Game over: nobody guessed the word in time: everyone loses."]
    assert env.state.result.rewards == {a: -1.0 for a in env.state.agents}
    assert env.state.result.winners == ()
    assert all(env.infos[a]["outcome"] == "loss" for a in env.state.agents)
    assert env.game.metrics(env.state)["questions_used"] == 15


def test_questions_config_and_invalid_turn_is_lost():
    env = socialgym_env.make("insider", questions=2)
    env.reset(seed=SEED)
    env.step("shout something")                        # invalid: Gael loses the turn (it counts)
    assert env.infos["player_1"]["invalid_action"]["reason"].startswith("unknown action type")
    assert public_lines(env)[-1] == "[R1 questions] Moderator: Gael loses the turn."
    env.step("ask Is it electric?")
    assert env.state.result.reason == "nobody guessed the word in time: everyone loses"


def test_pluggable_master_by_name_and_on_the_game():
    calls = []

    class EchoMaster:
        def answer(self, question, word, category):
            calls.append((question, word, category))
            return "Yes, absolutely."

    register_master("test_echo", EchoMaster)
    try:
        env = play("insider", ["ask Does it make music you can hum along to?"], seed=SEED, master="test_echo")
        assert calls == [("Does it make music you can hum along to?", "harmonica", "musical instrument")]
        assert public_lines(env)[-1] == "[R1 questions] Moderator: Master: yes."
    finally:
        MASTERS.pop("test_echo")
    env = socialgym_env.make("insider", invalid_action="raise")
    env.game.master = lambda question, word, category: "Not sure."
    env.reset(seed=SEED)
    env.step("ask Is it an instrument?")
    assert public_lines(env)[-1] == "[R1 questions] Moderator: Master: I can't answer that."
    with pytest.raises(ConfigError):
        socialgym_env.make("insider", master="nobody")


def test_word_never_reaches_the_commons(monkeypatch):
    def run(index):
        original = insider_module.draw_word

        def draw(rng, words):
            original(rng, words)
            return [w for w in words if w["category"] == "musical instrument"][index]

        monkeypatch.setattr(insider_module, "draw_word", draw)
        env = socialgym_env.make("insider", invalid_action="raise")
        env.reset(seed=SEED)
        views, insider = [], []
        for move in ["ask What is it?", "ask Why?", "ask Really?", "ask Hmm?", "ask What?", "guess drum"]:
            views.append([(env.observe(a)["text"], repr(env.infos[a]), [m.text for m in env.state.visible_to(a)])
                          for a in ["player_1", "player_2", "player_3", "player_4"]])
            insider.append(env.observe("player_0")["text"])
            env.step(move)
        return views, insider, env

    views_a, insider_a, env_a = run(0)
    views_b, insider_b, env_b = run(1)
    assert (env_a.state.g.word, env_b.state.g.word) == ("piano", "guitar")
    assert views_a == views_b and insider_a != insider_b
    assert env_a.game.public_data(env_a.state, "player_1")["word"] is None
    assert env_a.game.public_data(env_a.state, "player_0")["word"] == "piano"


def test_cannot_ask_out_of_turn_or_vote_for_oneself():
    env = play("insider", FOUND + TALK, seed=SEED)
    with pytest.raises(InvalidActionError):
        env.step("vote Ines")                # player_0 is Ines
    env = play("insider", [], seed=SEED)
    with pytest.raises(InvalidActionError):
        env.step("vote Ines")                # questions phase: only ask / guess


def test_metadata():
    info = socialgym_env.game_class("insider").info
    assert (info.main_role, info.alt_role, info.num_players, info.outcome) == ("Common", "Insider", 5, "team")
    assert info.skills == ("coordination", "deception", "tom")
    assert info.roles == (("Insider", 1, "insider"), ("Common", 4, "commons"))


def test_turn_cap_is_a_draw_safety_net():
    assert_turn_cap_is_a_draw("insider", SEED)
