"""Rollouts on Ray actors give the same episodes as playing the shards locally."""
from socialgym_training.multiturn.episode import episode_specs
from socialgym_training.multiturn.generation import hf_generate_fn
from socialgym_training.multiturn.rollout import play_episodes
from socialgym_training.ray_rollouts import ray_play_episodes


def test_ray_actors_play_the_same_episodes_as_local_shards(smollm2_base, local_ray):
    model, tokenizer = smollm2_base
    specs = episode_specs("rock_paper_scissors", "player_1", ["scripted:constant:rock"], [0, 1, 2], {"rounds": 1})
    remote = ray_play_episodes(specs, num_actors=2, shard_size=2, max_new_tokens=6, temperature=1.0, seed=5)
    local = play_episodes(specs[:2], hf_generate_fn(model, tokenizer, 6, 1.0, seed=5), tokenizer) + \
        play_episodes(specs[2:], hf_generate_fn(model, tokenizer, 6, 1.0, seed=6), tokenizer)
    assert [e.spec.seed for e in remote] == [0, 1, 2]
    assert [e.completion_ids for e in remote] == [e.completion_ids for e in local]
    assert [e.reward for e in remote] == [e.reward for e in local]
