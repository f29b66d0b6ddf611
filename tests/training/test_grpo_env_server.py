"""GRPO rollouts through the OpenEnv-protocol env server (socialgym_training/grpo_games.py --env_server):
the remote vector env plays exactly the episodes the local one plays, and a one-step GRPO run
sends every episode through a live server on 127.0.0.1."""
import functools
import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("openenv")

from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.client import RemoteVecEnv   # noqa: E402
from socialgym_agents.serve.openenv_app import create_openenv_app   # noqa: E402
from socialgym_training import grpo_games   # noqa: E402
from socialgym_training.multiturn.episode import episode_specs   # noqa: E402
from socialgym_training.multiturn.rollout import play_episodes   # noqa: E402


def first_legal_generate(tokenizer):
    """A deterministic learner: the first legal action of each live episode, as reply token ids."""
    def generate(contexts, infos):
        return [tokenizer(json.dumps({"action_type": (info.get("legal_action_list") or ["pass"])[0].split(" ")[0],
                                      "argument": " ".join((info.get("legal_action_list") or ["pass"])[0].split(" ")[1:])}),
                          add_special_tokens=False)["input_ids"] for info in infos]
    return generate


def test_remote_vector_env_plays_the_same_episodes_as_the_local_one(tokenizer):
    specs = episode_specs("liars_dice", "player_1", ["scripted:heuristic"], range(4), {})
    local = play_episodes(specs, first_legal_generate(tokenizer), tokenizer)
    with BackgroundServer(create_openenv_app()) as url:
        remote = play_episodes(specs, first_legal_generate(tokenizer), tokenizer,
                               make_vec=functools.partial(RemoteVecEnv, url))
    assert [e.reward for e in remote] == [e.reward for e in local]
    assert [e.completion_ids for e in remote] == [e.completion_ids for e in local]     # same tokens seen
    assert [e.actions for e in remote] == [e.actions for e in local]
    assert {e.learner for e in remote} == {"player_1"} and len({e.reward for e in local}) >= 1
    with pytest.raises(ValueError, match="full prompt"):
        play_episodes(specs, first_legal_generate(tokenizer), tokenizer, prompt="compact",
                      make_vec=functools.partial(RemoteVecEnv, "http://127.0.0.1:9"))


def test_grpo_games_one_step_through_the_env_server(tmp_path, smollm2_copy):
    import httpx

    # No idle expiry: on a loaded machine a training step can outlast the default timeout.
    with BackgroundServer(create_openenv_app(idle_timeout_s=None)) as url:
        metrics = grpo_games.main(["--rounds", "1", "--steps", "1", "--episodes_per_step", "1",
                                   "--num_generations", "2", "--eval_before", "false", "--eval_episodes", "1",
                                   "--eval_batch", "1", "--max_new_tokens", "4", "--env_server", url, "--prompt", "full",
                                   "--out", str(tmp_path)], preloaded=smollm2_copy)
        opened = httpx.get(url + "/health").json()["sessions_opened"]
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert len((tmp_path / "rollouts.csv").read_text().splitlines()) == 2          # header + one step
    assert metrics["after"]["win"]["n"] == 1
    assert opened == 2 + 1                         # one session per rollout episode, then per eval episode
