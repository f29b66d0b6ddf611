"""The Gymnasium single-seat view of the games and its vectorised form."""
import warnings

import pytest
from gymnasium.utils.env_checker import check_env

from socialgym_agents.base import Decision
from socialgym_agents.llm.backend import Reply
from socialgym_agents.single_agent import SingleAgentVecEnv, make_single_agent_env


@pytest.mark.parametrize("game,seat", [("rock_paper_scissors", "player_1"), ("prisoners_dilemma", 0),
                                       ("werewolves", "werewolf"), ("liars_dice", "player_2"),
                                       ("chess", "player_0")])
def test_check_env_with_text_spaces(game, seat):
    env = make_single_agent_env(game, seat, opponents=["scripted:random"], max_steps=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # gymnasium warns that Text spaces are not Box
        check_env(env, skip_render_check=True)


def _play(env, seed, action):
    obs, info = env.reset(seed=seed)
    steps = 0
    while True:
        assert info["learner"] == env.learner and info.get("legal_actions")
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            return reward, info, steps


def test_learner_only_acts_for_its_own_seat():
    env = make_single_agent_env("prisoners_dilemma", "player_1", opponents="scripted:constant:cooperate")
    reward, info, steps = _play(env, 3, "defect")
    turns = info["record"]["turns"]
    assert steps == 5 and reward == 1.0 and info["outcome"] == "win"
    assert {t["agent"] for t in turns} == {"player_0", "player_1"}
    assert all(t["action"] == ("defect" if t["agent"] == "player_1" else "cooperate")
               for t in turns)
    assert info["record"]["roster"][1]["policy"] == "learner"
    with pytest.raises(RuntimeError, match="over"):
        env.step("defect")


def test_an_opponent_decision_out_of_turn_is_refused():
    env = make_single_agent_env("rock_paper_scissors", "player_0", opponents="scripted:constant:rock")
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="not its turn"):
        env.apply("player_0", Decision("paper"))      # the learner's seat, through the opponent path
    with pytest.raises(RuntimeError, match="not its turn"):
        env.apply("player_1", Decision("paper"))      # player_1 moves after the learner


def test_role_picks_the_seat_dealt_that_role_every_episode():
    env = make_single_agent_env("werewolves", "Seer", opponents="scripted:heuristic", max_steps=30)
    seats = set()
    for seed in range(6):
        _, info = env.reset(seed=seed)
        assert info["true_role"] == "Seer"
        seats.add(info["learner"])
    assert len(seats) > 1                                # roles are dealt by the seed


def test_bad_seat_and_opponent_count_name_what_is_valid():
    with pytest.raises(ValueError, match="roles: .*Werewolf"):
        make_single_agent_env("werewolves", "dragon")
    with pytest.raises(ValueError, match="other 3 seats"):
        make_single_agent_env("skull", 0, opponents=["scripted:random", "scripted:random"])
    with pytest.raises(ValueError, match="unknown scripted policy"):
        make_single_agent_env("chicken", 0, opponents=["scripted:nope"])


def test_vector_env_matches_single_envs():
    seeds = [4, 5, 4]
    single = []
    for seed in seeds:
        env = make_single_agent_env("liars_dice", "player_1", opponents="scripted:random", max_steps=60)
        single.append(_play(env, seed, "liar")[0:2])
    vec = SingleAgentVecEnv("liars_dice", "player_1", "scripted:random", num_envs=3, max_steps=60)
    vec.reset(seeds)
    while not all(vec.dones):
        _, rewards, terminated, truncated, infos = vec.step(["liar"] * 3)
    for (reward, info), vec_reward, vec_info in zip(single, rewards, infos):
        assert vec_reward == reward
        assert [t["raw"] for t in vec_info["record"]["turns"]] == \
            [t["raw"] for t in info["record"]["turns"]]
    # the same seed gives the same opponent randomness in different envs (a GRPO group)
    assert [t["raw"] for t in infos[0]["record"]["turns"]] == \
        [t["raw"] for t in infos[2]["record"]["turns"]]


def test_vector_env_sends_model_opponents_one_batch_per_tick(make_fake_policy):
    from socialgym_agents.runner import PolicyPool
    fake = make_fake_policy(fn=lambda item: Reply('{"action_type": "rock"}'))
    vec = SingleAgentVecEnv("rock_paper_scissors", "player_1", "fake", num_envs=4,
                            pool=PolicyPool(prebuilt={"fake": fake}), rounds=2)
    vec.reset([0, 1, 2, 3])
    while not all(vec.dones):
        _, rewards, *_ = vec.step(["paper"] * 4)
    assert [len(call) for call in fake.backend.calls] == [4, 4]     # one call per round, all envs
    assert rewards == [1.0] * 4
