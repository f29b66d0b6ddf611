"""Single-turn RLVR: GRPO with LoRA on SocialMaze Hidden Role Deduction, rewarded by the exact scorer.

    python socialgym_training/grpo_hrd.py --steps 30 --out runs/grpo_hrd

Reads nothing (the puzzles are generated from seeds); writes to ``--out``:

| file | holds |
|------|-------|
| ``adapter/`` | the LoRA adapter (PEFT ``save_pretrained``) |
| ``reward_curve.csv`` / ``.png`` | per GRPO step: mean correctness and format reward |
| ``metrics.json`` | the config, held-out accuracy before/after with 95% Wilson intervals, timing |

Rewards (two functions, both logged by TRL):

- ``correctness_reward``: 1.0 iff the completion names the right Criminal *and* Player 1's
  true role, as decided by :func:`socialgym_env.socialmaze.scoring.score_answer` against the
  instance (the puzzle is certified to have exactly one answer), else 0.0.
- ``format_reward``: 1.0 iff the completion's last non-empty line is exactly the requested
  ``Criminal: Player <n>; My role: <role>`` form, else 0.0 (weighted by ``--format_weight``).

Train and held-out puzzles come from different dataset seeds. Evaluation is greedy.

``--answer_prefix "Criminal: Player "`` starts every reply (training and evaluation) with that
text, after the chat template's assistant header; it is not generated, so it is not in the loss,
and the rewards score prefix + completion. A 135M model that never writes the answer line gives
GRPO groups of equal (zero) rewards and so no gradient; the prefix makes every sample an answer.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from socialgym_training.configs import EvalArgs, LoraArgs, ModelArgs, RLArgs, RunArgs
from socialgym_env.atomic import atomic_dir


@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, RLArgs, EvalArgs):
    preset: str = "easy"
    """SocialMaze preset (easy: 6 players)"""
    variant: str = "full"
    """Original / rumormonger / lunatic / full"""
    train_size: int = 256
    """Training puzzles (dataset seed = seed)"""
    eval_size: int = 100
    """Held-out puzzles (dataset seed = seed + 1000)"""
    prompts_per_step: int = 2
    """Distinct puzzles per step"""
    num_generations: int = 8
    """Completions per puzzle (one GRPO group)"""
    max_completion_length: int = 24
    """The generation length bound (tokens)"""
    format_weight: float = 0.5
    """Weight of the format reward next to correctness"""
    answer_prefix: str = ""
    """Forced start of every reply, e.g. "Criminal: Player " (not in the loss)"""
    eval_batch_size: int = 20
    """Held-out puzzles generated per batch"""
    # defaults of this script (the options are documented in socialgym_training.configs)
    out: str = "runs/grpo_hrd"
    steps: int = 30
    learning_rate: float = 1e-4

ANSWER_LINE = re.compile(r"^\s*criminal:\s*player\s+\d+\s*;\s*my role:\s*(criminal|rumormonger|lunatic|investigator)"
                         r"\s*\.?\s*$", re.I)


def completion_text(completion) -> str:
    """TRL passes conversational completions as message lists, plain ones as strings."""
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    return str(completion)


def _answers(completions, prefix) -> list:
    """The whole replies: the forced prefix (a dataset column; none without --answer_prefix) + completion."""
    prefix = prefix or [""] * len(completions)
    return [p + completion_text(c) for p, c in zip(prefix, completions)]


def correctness_reward(completions, instance, prefix=None, **kwargs) -> list:
    from socialgym_env.socialmaze.instance import MazeInstance
    from socialgym_env.socialmaze.scoring import score_answer
    return [score_answer(text, MazeInstance.from_dict(json.loads(i))).reward
            for text, i in zip(_answers(completions, prefix), instance)]


def format_reward(completions, prefix=None, **kwargs) -> list:
    rewards = []
    for answer in _answers(completions, prefix):
        lines = [line for line in answer.splitlines() if line.strip()]
        rewards.append(1.0 if lines and ANSWER_LINE.match(lines[-1]) else 0.0)
    return rewards


def puzzles(n: int, seed: int, preset: str, variant: str) -> list:
    from socialgym_env.socialmaze.dataset import generate_dataset
    from socialgym_env.socialmaze.instance import MazeConfig
    return generate_dataset(n, seed, MazeConfig.from_preset(preset, variant=variant))


def prompt_text(tokenizer, instance, answer_prefix: str) -> str:
    """The chat-templated prompt, ending in the assistant header and the forced answer start."""
    return tokenizer.apply_chat_template([{"role": "user", "content": instance.prompt()}], tokenize=False,
                                         add_generation_prompt=True) + answer_prefix


def as_dataset(instances, tokenizer=None, answer_prefix: str = ""):
    """Conversational prompts; with an answer prefix, templated text prompts ending in it."""
    from datasets import Dataset
    return Dataset.from_list([{"prompt": prompt_text(tokenizer, inst, answer_prefix) if answer_prefix
                               else [{"role": "user", "content": inst.prompt()}],
                               "instance": json.dumps(inst.to_dict()), "prefix": answer_prefix}
                              for inst in instances])


def evaluate(model, tokenizer, instances, max_new_tokens: int, batch_size: int, answer_prefix: str = "") -> dict:
    """Greedy answers to held-out puzzles: accuracy (both parts right), format rate, 95% intervals."""
    import torch

    from socialgym_env.socialmaze.scoring import score_answer
    from socialgym_training.common import rate_with_interval
    tokenizer.padding_side = "left"
    correct = formatted = criminal = 0
    model.eval()
    for start in range(0, len(instances), batch_size):
        chunk = instances[start:start + batch_size]
        texts = [prompt_text(tokenizer, i, answer_prefix) for i in chunk]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, temperature=None,
                                 top_p=None, top_k=None, pad_token_id=tokenizer.pad_token_id)
        for inst, ids in zip(chunk, out[:, batch["input_ids"].shape[1]:]):
            text = answer_prefix + tokenizer.decode(ids, skip_special_tokens=True)
            result = score_answer(text, inst)
            correct += int(result.reward == 1.0)
            criminal += int(result.criminal_correct)
            formatted += int(format_reward([text])[0] == 1.0)   # text already holds the prefix
    n = len(instances)
    return {"accuracy": rate_with_interval(correct, n), "criminal_accuracy": rate_with_interval(criminal, n),
            "format_rate": rate_with_interval(formatted, n)}


def main(argv=None, preloaded=None) -> dict:
    """Run the script; ``preloaded`` = (model, tokenizer) skips loading (tests reuse one load)."""
    from trl import GRPOTrainer

    from socialgym_training.common import fail, finish_run, grpo_args, load_base, parse_config
    config = parse_config(Config, argv)
    try:
        puzzles(1, config.seed, config.preset, config.variant)      # a bad preset / variant: say so now
    except (KeyError, ValueError) as err:
        fail(str(err).strip("'\""))
    out = Path(config.out)
    started = time.time()
    model, tokenizer = preloaded or load_base(config.model, config.threads, config.device)
    train = puzzles(config.train_size, config.seed, config.preset, config.variant)
    held_out = puzzles(config.eval_size, config.seed + 1000, config.preset, config.variant)

    # 1. held-out accuracy of the base model
    before = evaluate(model, tokenizer, held_out, config.max_completion_length, config.eval_batch_size,
                      config.answer_prefix) if config.eval_before else None
    print("before:", json.dumps(before))
    if config.steps == 0:                          # evaluation only
        return finish_run(out, config, before, started=started)

    # 2. GRPO: each step samples `num_generations` answers to `prompts_per_step` puzzles
    args = grpo_args(out, config.device, config.progress, max_steps=config.steps,
                     learning_rate=config.learning_rate, seed=config.seed,
                     per_device_train_batch_size=config.prompts_per_step * config.num_generations,
                     num_generations=config.num_generations,
                     max_completion_length=config.max_completion_length, temperature=config.temperature,
                     reward_weights=[1.0, config.format_weight])
    tokenizer.padding_side = "left"
    trainer = GRPOTrainer(model=model, reward_funcs=[correctness_reward, format_reward], args=args,
                          train_dataset=as_dataset(train, tokenizer, config.answer_prefix), processing_class=tokenizer,
                          peft_config=config.peft_config())
    trained_at = time.time()
    trainer.train()
    train_seconds = time.time() - trained_at

    # 3. held-out accuracy after training; adapter, curves, metrics
    with atomic_dir(out / "adapter", marker="adapter_config.json") as folder:
        trainer.model.save_pretrained(folder)
    after = evaluate(trainer.model, tokenizer, held_out, config.max_completion_length, config.eval_batch_size,
                     config.answer_prefix)
    print("after:", json.dumps(after))
    return finish_run(out, config, before, after, trainer, started, train_seconds,
                      ["rewards/correctness_reward/mean", "rewards/format_reward/mean", "reward"],
                      f"GRPO on HRD {config.preset}/{config.variant}")


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.grpo_hrd")
