"""Find the Spy (seed 004) observer task: instances, exact scoring, baselines, the Gymnasium env."""
import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import socialgym_env.socialmaze  # noqa: F401  (registers the envs)
from socialgym_env.socialmaze import spy as S

OBVIOUS = S.SpyInstance("t-1", civilian_word="coffee", spy_word="tea", spy=3, descriptions=[
    ["Morning espresso shots.", "A barista makes espresso.", "Herbal leaves in a teabag.", "Espresso from a barista."],
    ["Strong barista drink.", "Espresso again.", "A herbal teabag.", "Barista art."],
])


def test_build_instance_is_seeded_and_consistent():
    a = S.build_instance("x", 7, spy_is_player1=False)
    assert a == S.build_instance("x", 7, spy_is_player1=False)
    assert (a.n_players, a.n_rounds) == (4, 3) and 2 <= a.spy <= 4
    assert a.player1_role == "Civilian" and a.player1_word == a.civilian_word != a.spy_word
    b = S.build_instance("y", 7, spy_is_player1=True)
    assert b.spy == 1 and b.player1_role == "Spy" and b.player1_word == b.spy_word
    assert f'Your word is "{b.spy_word}"' in b.prompt() and b.civilian_word not in b.prompt().split("Round 1")[0]
    assert S.SpyInstance.from_dict(a.to_dict()) == a


def test_describers_see_the_history_and_cannot_say_their_word():
    seen = []

    def describer(player, word, round_no, history):
        seen.append(len(history))
        return f"My {word.upper()} is nice, {word}s too"
    inst = S.build_instance("z", 1, False, describer, "test", n_players=4, n_rounds=2)
    assert seen == list(range(8))
    assert all(text == "My ___ is nice, ___ too" for row in inst.descriptions for text in row)
    assert S.mask_word("teabag with tea", "tea") == "teabag with ___"


@pytest.mark.parametrize("n, spies", [(8, 2), (12, 3), (100, 25)])
def test_exactly_a_quarter_spy_perspective(n, spies):
    assert sum(S.spy_perspectives(n, seed=3)) == spies


@pytest.mark.parametrize("answer, reward, reason", [
    ("Spy: Player 3; My role: Civilian", 1.0, None),
    ('{"spy": "P3", "role": "civilian"}', 1.0, None),
    ("I think... Final answer: Player 3 is the spy. I am a Civilian.", 1.0, None),
    ("Spy: Player 3", 0.0, "no role found"),
    ("Spy: Player 3; My role: Spy", 0.0, None),       # contradicts itself: only the spy part is right
    ("Player 2 is the spy, no wait, Player 3 is the spy; I am a civilian", 0.0, "several spies named: [2, 3]"),
    ("Spy: Player 9; My role: Civilian", 0.0, "player 9 is out of range 1..4"),
])
def test_scoring(answer, reward, reason):
    result = S.score_spy_answer(answer, OBVIOUS)
    assert result.reward == reward and result.reason == reason


def test_naming_player1_implies_the_spy_role():
    me = S.SpyInstance("t-2", "coffee", "tea", 1, OBVIOUS.descriptions)
    assert S.score_spy_answer("I am the spy", me).reward == 1.0
    assert S.score_spy_answer("3", OBVIOUS).spy_correct and not S.score_spy_answer("3", OBVIOUS).role_correct
    assert S.score_spy_answer("1", me).reward == 1.0


def test_baselines():
    assert S.odd_one_out_answer(OBVIOUS) == "Spy: Player 3; My role: Civilian"
    assert S.score_spy_answer(S.always_civilian_answer(OBVIOUS), OBVIOUS).reward == 1.0
    me = S.SpyInstance("t-3", "coffee", "tea", 1, [[r[2], r[1], r[0], r[3]] for r in OBVIOUS.descriptions])
    assert S.score_spy_answer(S.odd_one_out_answer(me), me).reward == 1.0
    assert S.score_spy_answer(S.always_civilian_answer(me), me).reward == 0.0
    assert S.random_answer(OBVIOUS) == S.random_answer(OBVIOUS)


def test_gym_env():
    env = gym.make(S.ENV_ID, instances=[OBVIOUS.to_dict()])
    obs, info = env.reset(seed=0)
    assert "Player 3: Herbal leaves" in obs["text"] and info["word"] == "coffee" and "spy" not in info
    _, reward, terminated, truncated, info = env.step("Spy: Player 3; My role: Civilian")
    assert (reward, terminated, truncated, info["perspective"]) == (1.0, True, False, "Civilian")
    with pytest.raises(RuntimeError):
        env.step("3")
    fresh = gym.make(S.ENV_ID)
    first = fresh.reset(seed=5)[0]["text"]
    assert fresh.reset(seed=5)[0]["text"] == first
    check_env(gym.make(S.ENV_ID).unwrapped, skip_render_check=True)
