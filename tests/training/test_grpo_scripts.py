"""The two GRPO scripts: HRD reward values, and a 2-step smoke run of each that saves an adapter
the LLM backend loads (``smollm2?adapter=DIR``)."""
import json

import pytest

from socialgym_agents.registry import make_policy
from socialgym_env.socialmaze.baselines import format_answer
from socialgym_training import grpo_games, grpo_hrd


@pytest.fixture(scope="module")
def instance():
    return grpo_hrd.puzzles(1, 5, "easy", "full")[0]


def _rewards(text, instance):
    column = [json.dumps(instance.to_dict())]
    completion = [[{"role": "assistant", "content": text}]]
    return grpo_hrd.correctness_reward(completion, column)[0], grpo_hrd.format_reward(completion)[0]


def test_hrd_rewards_on_fixed_answers(instance):
    right = format_answer(instance.criminal, instance.player1_role)
    wrong_criminal = next(p for p in range(1, 7) if p != instance.criminal)
    wrong = format_answer(wrong_criminal, instance.player1_role)
    assert right.startswith("Criminal: Player")
    assert _rewards(right, instance) == (1.0, 1.0)
    assert _rewards("Let me think.\n" + right, instance) == (1.0, 1.0)
    assert _rewards(wrong, instance) == (0.0, 1.0)                       # well formed, wrong
    assert _rewards(f"Player {instance.criminal} is the criminal and I am the "
                    f"{instance.player1_role.value}", instance) == (1.0, 0.0)   # right, not the format
    assert _rewards("I cannot tell.", instance) == (0.0, 0.0)            # malformed
    assert _rewards(right + "\nActually no idea", instance)[1] == 0.0


def test_hrd_rewards_score_the_forced_answer_prefix_with_the_completion(instance):
    prefix = "Criminal: Player "
    right = format_answer(instance.criminal, instance.player1_role)
    column, prefixes = [json.dumps(instance.to_dict())], [prefix]
    completion = [right[len(prefix):]]                              # plain-text prompt: completions are strings
    assert grpo_hrd.correctness_reward(completion, column, prefix=prefixes) == [1.0]
    assert grpo_hrd.format_reward(completion, prefix=prefixes) == [1.0]
    assert grpo_hrd.format_reward(completion) == [0.0]      # without the prefix it is not the answer line


def test_hrd_dataset_with_a_prefix_ends_each_prompt_in_it(instance, smollm2_base):
    tokenizer = smollm2_base[1]
    row = grpo_hrd.as_dataset([instance], tokenizer, "Criminal: Player ")[0]
    assert row["prompt"].endswith("<|im_start|>assistant\nCriminal: Player ") and row["prefix"] == "Criminal: Player "
    assert instance.prompt() in row["prompt"]
    assert isinstance(grpo_hrd.as_dataset([instance])[0]["prompt"], list)   # no prefix: conversational


def _loads_as_policy(adapter_dir):
    from socialgym_agents.llm.hf_backend import load_model
    policy = make_policy(f"smollm2?adapter={adapter_dir}&max_new_tokens=4")
    assert policy.backend.model is not load_model("smollm2")[0]      # the base with the adapter merged in


def test_grpo_hrd_two_step_smoke_run(tmp_path, smollm2_copy):
    metrics = grpo_hrd.main(["--steps", "2", "--train_size", "2", "--eval_size", "1", "--prompts_per_step", "1",
                             "--num_generations", "2", "--max_completion_length", "4", "--eval_batch_size", "1",
                             "--out", str(tmp_path)], preloaded=smollm2_copy)
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert (tmp_path / "reward_curve.csv").read_text().count("\n") == 3        # header + 2 steps
    assert (tmp_path / "reward_curve.png").stat().st_size > 0
    assert metrics["before"]["accuracy"]["n"] == 1 and metrics["after"]["accuracy"]["n"] == 1
    _loads_as_policy(tmp_path / "adapter")


def test_grpo_games_two_step_smoke_run(tmp_path, smollm2_copy):
    metrics = grpo_games.main(["--rounds", "1", "--policy_options", "max_retries=0",      # the policy's layout
                               "--steps", "2", "--episodes_per_step", "1", "--num_generations", "2",
                               "--eval_episodes", "2", "--eval_batch", "2", "--max_new_tokens", "4",
                               "--out", str(tmp_path)], preloaded=smollm2_copy)
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert (tmp_path / "reward_curve.csv").read_text().count("\n") == 3
    rollouts = (tmp_path / "rollouts.csv").read_text().splitlines()
    assert rollouts[0].startswith("step,role") and len(rollouts) == 3                  # one role, 2 steps
    spans = json.loads((tmp_path / "mask_example.json").read_text())
    assert [s["in_loss"] for s in spans] == [False, True]                # prompt (with the reply prefix), reply
    assert spans[0]["text"].endswith('assistant\n{"action_type": "')       # the prefix the policy prefills
    assert "Here is the description of the game" in spans[0]["text"]           # its Appendix-E prompt
    assert metrics["before"]["win"]["n"] == 2
    assert metrics["rate_as"] == (f"smollm2?adapter={tmp_path / 'adapter'}&temperature=1.0"
                                  "&max_new_tokens=4&constrained=1&max_retries=0")
    _loads_as_policy(tmp_path / "adapter")


def test_bad_arguments_exit_with_code_2(capsys):
    with pytest.raises(SystemExit) as raised:
        grpo_games.main(["--no_such_option", "1"])
    assert raised.value.code == 2 and "--game" in capsys.readouterr().err
