"""env.clone(): a snapshot of the full state, RNG included. For every game, a clone taken in
the middle of a seeded random episode and continued with the same actions gives the record the
original gives, and stepping a clone leaves the original untouched."""
import json
import random

import pytest

import socialgym_env

from helpers import grammar_sample

GAMES = socialgym_env.game_ids()


def _canonical(env) -> str:
    return json.dumps(env.episode_record(), ensure_ascii=False, sort_keys=True)


def _continue(env, rng, junk_rate=0.1) -> str:
    """Play to the end with actions from ``rng`` (legal samples plus some junk, so that random
    fallbacks draw on the env's own RNG too); return the record as canonical JSON."""
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        env.step("junk" if rng.random() < junk_rate else grammar_sample(env, agent, info, rng))
    return _canonical(env)


@pytest.mark.parametrize("game_id", GAMES)
def test_clone_continued_with_the_same_actions_gives_the_same_record(game_id):
    env = socialgym_env.make(game_id, max_steps=60)
    env.reset(seed=11)
    rng = random.Random(5)
    for _ in range(5):       # a few decisions in, so the clone copies a game in progress
        agent = env.agent_selection
        _, _, terminated, truncated, info = env.last(observe=False)
        env.step(None if terminated or truncated else grammar_sample(env, agent, info, rng))
    restored, other_future = env.clone(), env.clone()
    before = _canonical(env)
    _continue(other_future, random.Random(99))
    assert _canonical(env) == before                 # stepping a clone leaves the original as it was
    original = _continue(env, random.Random(7))
    assert json.loads(original)["finished"]
    assert _continue(restored, random.Random(7)) == original
