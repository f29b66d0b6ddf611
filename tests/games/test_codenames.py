"""Rule tests for Codenames, played through the env with scripted moves.

The board, the key and the teams come from the seed; each test reads them from the state and
acts on them, so it says which rule it checks rather than which words a seed drew.
"""
import random

import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError
from socialgym_env.games.codenames import (ASSASSIN, BLUE, BYSTANDER, RED, SPYMASTER, clue_problem, deal_key,
                                           associations, guess_limit, guess_outcome, other_team, word_list)
from socialgym_env.testing import check_game


def new_env(seed=0, **config):
    env = socialgym_env.make("codenames", invalid_action="raise", **config)
    env.reset(seed=seed)
    return env


def words_of(env, card):
    g = env.state.g
    return [w for w in g.board if g.key[w] == card and w not in g.revealed]


def clue(env, text="thing 1"):
    assert env.state.phase == "clue"
    env.step(f"clue {text}")
    while env.state.phase == "team_talk":
        env.step("pass")


# ------------------------------------------------------------------ pure rules
def test_key_card_counts():
    words = list(word_list()[:25])
    key = deal_key(random.Random(3), words, BLUE)
    cards = list(key.values())
    assert (cards.count(BLUE), cards.count(RED), cards.count(BYSTANDER), cards.count(ASSASSIN)) == (9, 8, 7, 1)
    assert set(key) == set(words)


def test_clue_legality():
    board = ["seal", "apple", "star"]
    assert clue_problem("seal", board) == "'seal' is a word on the board"
    assert clue_problem("SEAL", board) == "'SEAL' is a word on the board"
    assert clue_problem("sea", board) == "'sea' is part of the board word 'seal'"
    assert clue_problem("starfish", board) == "'starfish' contains the board word 'star'"
    assert clue_problem("ice-cream", board).startswith("a clue is one word of letters only")
    assert clue_problem("fruit", board) is None
    assert clue_problem("sea", ["apple", "star"]) is None          # seal face up: sea is fine again


def test_guess_limits_and_outcomes():
    assert [guess_limit(n) for n in (1, 2, 9)] == [2, 3, 10]
    assert guess_limit(0) is None                                  # the published rule: no limit
    assert guess_outcome(RED, RED) == "again"
    assert guess_outcome(BLUE, RED) == guess_outcome(BYSTANDER, RED) == "end"
    assert guess_outcome(ASSASSIN, BLUE) == "assassin"
    assert other_team(RED) == BLUE and other_team(BLUE) == RED


def test_word_list_is_large_and_clean():
    words = word_list()
    assert len(words) >= 200 and len(set(words)) == len(words)
    assert all(w.isalpha() and w == w.lower() for w in words)
    # every association group's name is a clue the rules allow on any board
    for tag, members in associations().items():
        assert len(members) >= 5 and clue_problem(tag, words) is None, tag


# ------------------------------------------------------------------ setup and seats
@pytest.mark.parametrize("n", [4, 5, 6, 7, 8])
def test_each_team_has_one_spymaster_and_the_operatives_split(n):
    env = new_env(num_players=n)
    s = env.state
    for team in (RED, BLUE):
        members = s.on_team(team, alive_only=False)
        assert [s.role(a) for a in members].count(SPYMASTER) == 1
    assert len(s.on_team(RED, alive_only=False)) - len(s.on_team(BLUE, alive_only=False)) == n % 2
    assert f"Codenames, {n} players in two teams" in env.observe("player_0")["text"]


@pytest.mark.parametrize("n", [3, 9])
def test_player_counts_outside_four_to_eight_are_refused(n):
    with pytest.raises(ConfigError):
        socialgym_env.make("codenames", num_players=n)


@pytest.mark.parametrize("config", [{}, {"num_players": 5}, {"num_players": 8}])
def test_conformance(config):
    check_game("codenames", **config)


def test_the_starting_team_has_nine_words_and_the_board_is_public():
    env = new_env(seed=5)
    g = env.state.g
    assert len(g.board) == 25 and len(set(g.board)) == 25
    assert len(words_of(env, g.starting)) == 9 and len(words_of(env, other_team(g.starting))) == 8
    assert g.turn == g.starting
    for agent in env.possible_agents:
        assert ", ".join(g.board[:5]) in env.observe(agent)["text"]


@pytest.mark.parametrize("seed", range(3))
def test_only_spymasters_see_the_key(seed):
    env = new_env(seed=seed, num_players=6)
    s, g = env.state, env.state.g
    assassin = words_of(env, ASSASSIN)[0]
    for agent in env.possible_agents:
        text = env.observe(agent)["text"]
        data = env.game.public_data(s, agent)
        private = [m.text for m in s.visible_to(agent) if m.visibility != "public"]
        if s.role(agent) == SPYMASTER:
            assert data["key"] == g.key and f"assassin: {assassin}." in text
            assert any(t.startswith("The key card:") for t in private)
        else:
            assert "key" not in data and "The key card" not in text and f"assassin: {assassin}" not in text
            assert private == []


# ------------------------------------------------------------------ clues
def test_malformed_clues_are_invalid_actions():
    env = new_env()
    for bad in ("clue two words 1", "clue fruit 10", "clue fruit", "clue 3"):
        with pytest.raises(InvalidActionError):
            env.step(bad)


@pytest.mark.parametrize("form", ["word", "part", "contains", "not letters"])
def test_an_illegal_clue_ends_the_turn_and_gives_the_other_team_a_word(form):
    env = new_env(seed=3)
    g = env.state.g
    team, other = g.turn, other_team(g.turn)
    word = next(w for w in g.board if len(w) > 3)
    text = {"word": word.upper(), "part": word[:-1], "contains": word + "s", "not letters": "ice-cream"}[form]
    before = env.game.words_left(env.state, other)
    env.step(f"clue {text} 2")
    assert env.state.phase == "clue" and g.turn == other          # no guess: the turn is over
    assert env.game.words_left(env.state, other) == before - 1
    gift, = g.revealed
    assert g.key[gift] == other
    assert g.clues == [{"team": team, "word": text, "number": 2, "legal": False}]
    line = next(t for t in env.episode_record()["transcript"] if "which is illegal" in t)
    assert f"{team.capitalize()}'s turn ends, and {other} gets {gift} (a {other} word) turned face up." in line


def test_a_face_up_word_is_a_legal_clue_again():
    env = new_env()
    g = env.state.g
    own = words_of(env, g.turn)[0]
    clue(env, "thing 1")
    env.step(f"guess {own}")
    env.step("stop")
    clue(env, f"{own} 1")                     # face up now: a legal clue for the other team
    assert g.clues[-1] == {"team": other_team(g.starting), "word": own, "number": 1, "legal": True}
    assert env.state.phase == "guess"


def test_an_illegal_clue_that_turns_the_other_teams_last_word_makes_them_win():
    env = new_env(seed=7)
    g = env.state.g
    other = other_team(g.turn)
    for word in words_of(env, other)[:-1]:
        g.revealed[word] = other
    env.step(f"clue {words_of(env, BYSTANDER)[0]} 1")
    assert env.state.result.reason == f"all {other} words are face up: {other} wins"


def test_an_invalid_clue_falls_back_to_a_random_legal_clue():
    env = socialgym_env.make("codenames")
    env.reset(seed=0)
    env.step("clue 2 fruit")
    assert env.turns[-1]["fallback"] and env.state.phase == "guess"
    word, number = env.state.g.clue
    assert clue_problem(word, env.state.g.board) is None and 0 <= number <= 9


# ------------------------------------------------------------------ guesses
def test_up_to_number_plus_one_guesses_then_the_turn_passes():
    env = new_env(seed=1)
    g = env.state.g
    team = g.turn
    own = words_of(env, team)
    clue(env, "thing 1")
    assert "stop" not in env.infos[env.agent_selection]["legal_action_list"]   # one guess is required
    env.step(f"guess {own[0]}")
    assert env.state.phase == "guess" and "stop" in env.infos[env.agent_selection]["legal_action_list"]
    env.step(f"guess {own[1]}")
    assert env.state.phase == "clue" and g.turn == other_team(team)       # 1 + 1 guesses used


def test_a_zero_clue_allows_any_number_of_guesses():
    env = new_env(seed=1)
    g = env.state.g
    own = words_of(env, g.turn)
    clue(env, "thing 0")
    for word in own[:4]:
        env.step(f"guess {word}")
        assert env.state.phase == "guess"
    assert any(line.endswith("gives the clue: thing 0 (any number of guesses).")
               for line in env.episode_record()["transcript"])


@pytest.mark.parametrize("card", ["other", BYSTANDER])
def test_a_wrong_guess_ends_the_turn_and_an_opponent_word_counts_for_them(card):
    env = new_env(seed=2)
    g = env.state.g
    team = g.turn
    target = words_of(env, other_team(team) if card == "other" else BYSTANDER)[0]
    before = env.game.words_left(env.state, other_team(team))
    clue(env, "thing 3")
    env.step(f"guess {target}")
    assert env.state.phase == "clue" and g.turn == other_team(team)
    assert env.game.words_left(env.state, other_team(team)) == before - (card == "other")
    assert g.revealed[target] == g.key[target]


def test_the_assassin_loses_the_game_for_the_guessing_team():
    env = new_env(seed=4)
    g = env.state.g
    team = g.turn
    clue(env, "thing 2")
    env.step(f"guess {words_of(env, ASSASSIN)[0]}")
    assert env.state.result.reason == f"{team} found the assassin: {other_team(team)} wins"
    for agent in env.possible_agents:
        assert env.rewards[agent] == (1.0 if env.state.team(agent) == other_team(team) else -1.0)
    assert env.episode_record()["metrics"]["assassin_found"] is True


def test_all_own_words_face_up_wins():
    env = new_env(seed=6)
    g = env.state.g
    team = g.turn
    clue(env, "thing 0")
    for word in words_of(env, team):
        env.step(f"guess {word}")
    assert env.state.result.reason == f"all {team} words are face up: {team} wins"
    assert all(env.rewards[a] == (1.0 if env.state.team(a) == team else -1.0) for a in env.possible_agents)


def test_turning_the_other_teams_last_word_makes_them_win():
    env = new_env(seed=7)
    g = env.state.g
    second = other_team(g.turn)
    for word in words_of(env, second)[:-1]:            # as if found on earlier turns
        g.revealed[word] = second
    clue(env, "thing 2")
    env.step(f"guess {words_of(env, second)[0]}")
    assert env.state.result.reason == f"all {second} words are face up: {second} wins"
    assert all(env.rewards[a] == (1.0 if env.state.team(a) == second else -1.0) for a in env.possible_agents)


def test_team_talk_is_heard_by_the_team_only():
    env = new_env(seed=0, num_players=6)
    s, g = env.state, env.state.g
    team = g.turn
    env.step("clue thing 1")
    assert s.phase == "team_talk"
    speaker = env.agent_selection
    env.step("say let us start with the first word")
    message = s.messages[-1]
    assert set(message.receivers) == set(s.on_team(team, alive_only=False))
    for agent in s.on_team(other_team(team), alive_only=False):
        assert "let us start" not in env.observe(agent)["text"]
    assert speaker in s.on_team(team, alive_only=False)


def test_operatives_take_the_guesses_in_turn():
    env = new_env(seed=0, num_players=6)
    g = env.state.g
    own = words_of(env, g.turn)
    clue(env, "thing 3")
    guessers = []
    for word in own[:3]:
        guessers.append(env.agent_selection)
        env.step(f"guess {word}")
    assert guessers[0] != guessers[1] and guessers[0] == guessers[2]
