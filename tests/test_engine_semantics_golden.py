"""The engine's speed work (issue 12) changes no byte of what agents see or what the log holds:
50 seeded random+junk episodes per game fingerprint to the hashes the engine made before it
(tests/record_digest.py says what is hashed), plus the lazy infos' contract."""
import copy
import json
import pickle

import pytest

import socialgym_env
from socialgym_env.lazy import LazyInfo

from record_digest import DIGESTS, SEEDS, episode_digest

GOLDEN = json.loads(DIGESTS.read_text())


@pytest.mark.parametrize("game_id", socialgym_env.game_ids())
def test_episodes_fingerprint_as_before(game_id):
    assert len(GOLDEN[game_id]) >= 50
    got = [episode_digest(game_id, seed) for seed in SEEDS]
    differ = [seed for seed, (a, b) in enumerate(zip(got, GOLDEN[game_id])) if a != b]
    assert not differ, f"{game_id}: seeds {differ} differ from the golden records"


def test_a_changed_observation_changes_the_fingerprint(monkeypatch):
    before = episode_digest("prisoners_dilemma", 0)
    monkeypatch.setattr(socialgym_env.SocialGymEnv, "observation_text",
                        lambda self, agent: "x" + self._render_observation(agent))
    assert episode_digest("prisoners_dilemma", 0) != before


def _eager(env, agent):
    return env.decision_view(agent) if agent == env.agent_selection else env._basic_info(agent)


def test_lazy_info_reads_like_the_eager_dict():
    env = socialgym_env.make("werewolves")
    env.reset(seed=3)
    for agent in env.agents:
        eager = _eager(env, agent)
        info = env.infos[agent]
        assert isinstance(info, LazyInfo)
        assert info == eager and eager == info and not (info != eager)
        assert list(info) == list(eager) and len(info) == len(eager)
        assert json.dumps(info) == json.dumps(eager)
        assert dict(info) == eager and {**info} == eager and info.copy() == eager
        assert copy.deepcopy(info) == eager and pickle.loads(pickle.dumps(info)) == eager
        assert ("legal_action_list" in info) == ("legal_action_list" in eager)


def test_a_held_info_keeps_describing_the_state_it_was_issued_for():
    env = socialgym_env.make("werewolves")
    env.reset(seed=1)
    actor = env.agent_selection
    watcher = next(a for a in env.agents if a != actor)
    expected_actor, expected_watcher = _eager(env, actor), _eager(env, watcher)
    held_actor, held_watcher = env.infos[actor], env.infos[watcher]      # not read yet
    for _ in range(5):
        env.step(env.grammar(env.agent_selection).sample(env.state.rng).text)
    assert held_actor == expected_actor and held_watcher == expected_watcher
    assert env.infos[actor] is not held_actor


def test_views_of_a_deep_copy_follow_the_copy():
    env = socialgym_env.make("liars_dice")
    env.reset(seed=2)
    env.step(env.grammar(env.agent_selection).sample(env.state.rng).text)
    agent = env.agent_selection
    text, grammar = env.observation_text(agent), env.grammar(agent)
    clone = copy.deepcopy(env)
    assert clone.observation_text(agent) == text and clone.grammar(agent) is not grammar
    assert clone.infos[agent] == env.infos[agent]
    action = env.grammar(agent).sample(env.state.rng).text
    env.step(action)
    assert clone.observation_text(agent) == text          # the original moved on, the copy did not
    clone.step(action)
    assert clone.observation_text(env.agent_selection) == env.observation_text(env.agent_selection)


def test_a_raised_invalid_action_leaves_the_infos_readable():
    env = socialgym_env.make("werewolves", invalid_action="raise")
    env.reset(seed=4)
    actor = env.agent_selection
    expected = {agent: _eager(env, agent) for agent in env.agents}
    with pytest.raises(socialgym_env.InvalidActionError):
        env.step("definitely not an action")
    assert {agent: dict(env.infos[agent]) for agent in env.agents} == expected
    assert env.agent_selection == actor


def test_a_replaced_state_is_noticed_without_any_call():
    """Assigning ``env.state`` (a snapshot restored by hand) is a change of the turn machine:
    infos issued before stay whole, and every later view follows the new state."""
    env = socialgym_env.make("liars_dice")
    env.reset(seed=5)
    agent = env.agent_selection
    expected = {a: _eager(env, a) for a in env.agents}
    held = dict(env.infos)
    before = env.observation_text(agent)
    restored = copy.deepcopy(env.state)
    restored.announce("The table was restored from a snapshot.")
    env.state = restored
    assert {a: dict(held[a]) for a in env.agents} == expected
    after = env.observation_text(agent)
    assert after != before and "restored from a snapshot" in after
    assert env.decision_view(agent)["new_messages"][-1].endswith("The table was restored from a snapshot.")
