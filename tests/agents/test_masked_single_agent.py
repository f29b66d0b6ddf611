"""The single-seat env never hands out a finished episode, and its masked form passes
gymnasium's check_env on every game."""
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import socialgym_env
from socialgym_agents.runner import PolicyPool
from socialgym_agents.single_agent import (SingleAgentVecEnv, derived_seed, make_masked_single_agent_env,
                                 make_single_agent_env)

GAMES = socialgym_env.game_ids()
# Games where an episode can end for the learner before its first decision (killed on the
# first night): measured, and asserted below (a redeal must happen there).
EARLY_EXIT_GAMES = {"werewolves", "triadic_werewolf"}
OPPONENTS = ("scripted:random", "scripted:heuristic")


def _targets(game_id):
    env = socialgym_env.make(game_id)
    roles = sorted({role for role, _ in env.game.role_deck()}) if env.game_info.roles else []
    return list(env.possible_agents) + roles


@pytest.mark.parametrize("game_id", GAMES)
def test_reset_always_hands_out_a_decision(game_id):
    seeds = range(200)
    redeals = 0
    for opponents in OPPONENTS:
        pool = PolicyPool(seed=0)
        for target in _targets(game_id):
            env = make_single_agent_env(game_id, target, opponents=opponents, pool=pool)
            for seed in seeds:
                obs, info = env.reset(seed=seed)
                assert not env.done and env.game.agent_selection == env.learner, (target, seed)
                assert info["legal_actions"] and info["learner"] == env.learner
                assert info["seed"] == (seed if not info["redeals"] else derived_seed(seed, info["redeals"]))
                redeals += info["redeals"]
    if game_id in EARLY_EXIT_GAMES:
        assert redeals > 0, f"{game_id}: no redeal happened, so the test exercised nothing"


def test_a_redeal_replaces_a_deal_without_a_decision():
    env = make_single_agent_env("werewolves", "villager", opponents="scripted:random")
    seed = next(s for s in range(100) if env.reset(seed=s)[1]["redeals"])
    # the requested seed alone (no redeal) ends the learner's part before it acts
    env.begin(seed)
    env._advance()
    assert env.done or not env.game.state.seat[env.learner].alive
    obs, info = env.reset(seed=seed)
    again = env.reset(seed=seed)
    assert obs == again[0] and info["seed"] == again[1]["seed"] != seed


def test_the_vector_env_redeals_too():
    vec = SingleAgentVecEnv("werewolves", "villager", opponents="scripted:random", num_envs=8)
    _, infos = vec.reset(list(range(8)))
    assert not any(vec.dones) and any(info["redeals"] for info in infos)
    assert all(env.game.agent_selection == env.learner for env in vec.envs)


@pytest.mark.parametrize("game_id", GAMES)
def test_check_env_masked_and_by_role(game_id):
    roles = [t for t in _targets(game_id) if not t.startswith("player_")]
    envs = [make_masked_single_agent_env(game_id, 0, opponents="scripted:random")]
    envs += [make_single_agent_env(game_id, role, opponents="scripted:random") for role in roles]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # gymnasium warns that Text spaces are not Box
        for env in envs:
            check_env(env, skip_render_check=True)


def test_masked_episode_against_a_fixed_opponent():
    env = make_masked_single_agent_env("prisoners_dilemma", "player_1", opponents="scripted:constant:cooperate")
    obs, info = env.reset(seed=0)
    defect = env.layout.actions.index("defect")
    assert np.array_equal(env.action_masks(), obs["action_mask"].astype(bool))
    assert env.action_masks()[defect]
    while True:
        obs, reward, terminated, truncated, info = env.step(defect)
        if terminated or truncated:
            break
    assert reward == 1.0 and info["record"]["invalid_actions"]["player_1"] == 0
    assert {t["action"] for t in info["record"]["turns"] if t["agent"] == "player_1"} == {"defect"}
    assert not obs["action_mask"].any()
