"""Run under a launcher (``accelerate launch --multi_gpu --num_processes 2 THIS OUT``) by
tests/training/test_distributed_vllm.py: each process checks the multi-process vLLM path on the
CPU with a fake vLLM engine and writes what it saw to OUT/rank<N>.json.

- the processes form one torch.distributed group (gloo);
- server mode under several processes is refused before training (one line, exit 2);
- each process would load its model onto its own GPU (cuda:<LOCAL_RANK>, CUDA faked visible);
- colocated generation goes through TRL's ``VLLMGeneration.generate`` (the fake binds each call
  to its real signature), with the reply schema and a budget of the longest legal reply + EOS
  (the trainer's bound is 12, below RPS's 14), and every episode's log-probabilities are a list.
"""
import inspect
import json
import sys
from pathlib import Path
from types import SimpleNamespace


class FakeColocatedGeneration:
    """TRL's ``VLLMGeneration`` in colocate mode: ``generate(prompts, images, num_generations)``
    answers each prompt with the longest legal reply of the call's schema, cut at the call's
    ``max_completion_length`` (as vLLM cuts at max_tokens), with -0.5 per sampled token."""

    mode = "colocate"
    tensor_parallel_size = 1
    temperature, top_p, top_k, min_p, repetition_penalty = 1.0, 1.0, 0, 0.0, 1.0

    def __init__(self, tokenizer, bound):
        self.tokenizer, self.max_completion_length, self.generation_kwargs = tokenizer, bound, None
        self.calls = []

    def generate(self, prompts, images, num_generations, profiler=None):
        from trl.generation.vllm_generation import VLLMGeneration
        inspect.signature(VLLMGeneration.generate).bind(self, prompts, images, num_generations, profiler)
        schema = (self.generation_kwargs or {}).get("structured_outputs", {}).get("json")
        self.calls.append({"max_tokens": self.max_completion_length, "schema": schema is not None})
        options = [json.dumps({k: v["const"] for k, v in o["properties"].items()}) for o in schema["anyOf"]]
        reply = max(options, key=lambda r: len(self.tokenizer(r, add_special_tokens=False)["input_ids"]))
        ids = (self.tokenizer(reply, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id])
        ids = ids[:self.max_completion_length]
        completions = [list(ids) for _ in prompts]
        return prompts, completions, [[[-0.5] for _ in c] for c in completions], None


def main(out: str) -> None:
    import os

    import torch
    from accelerate import Accelerator
    from transformers import AutoTokenizer

    from socialgym_training.common import model_path, parse_config, process_device
    from socialgym_training.grpo_games import Config, check_config
    from socialgym_training.multiturn.episode import episode_specs, rollout_output
    from socialgym_training.multiturn.generation import vllm_generate_fn
    from socialgym_training.multiturn.rollout import play_episodes
    accelerator = Accelerator(cpu=True)
    rank, world = accelerator.process_index, accelerator.num_processes
    seen = [None] * world
    torch.distributed.all_gather_object(seen, rank)
    result = {"rank": rank, "world": world, "backend": torch.distributed.get_backend(), "gathered": seen}

    # (a) server mode under several processes: refused before any model loads
    config = parse_config(Config, ["--use_vllm", "true", "--vllm_mode", "server", "--prompt", "full",
                                   "--out", str(Path(out) / f"run{rank}")])
    try:
        check_config(config)
        result["server_refused"] = None
    except SystemExit as refused:
        result["server_refused"] = refused.code
    colocate = parse_config(Config, ["--use_vllm", "true", "--vllm_mode", "colocate", "--prompt", "full",
                                     "--out", str(Path(out) / f"run{rank}")])
    check_config(colocate)                 # accepted

    # (c) each process's own GPU (CUDA faked visible: no GPU here)
    current = []
    real = torch.cuda.is_available, torch.cuda.set_device
    torch.cuda.is_available, torch.cuda.set_device = (lambda: True), current.append
    try:
        result["device"] = process_device("cuda")
    finally:
        torch.cuda.is_available, torch.cuda.set_device = real
    result["set_device"], result["local_rank"] = current, int(os.environ["LOCAL_RANK"])

    # (b, d, e) colocated generation through TRL's generate, with the reply budget
    tokenizer = AutoTokenizer.from_pretrained(model_path("smollm2"), local_files_only=True)
    generation = FakeColocatedGeneration(tokenizer, bound=12)
    specs = episode_specs("rock_paper_scissors", "player_0", ["scripted:constant:rock"], [rank * 10, rank * 10 + 1],
                          {"rounds": 2})
    episodes = play_episodes(specs, vllm_generate_fn(SimpleNamespace(vllm_generation=generation), tokenizer=tokenizer),
                             tokenizer, max_turns=4)
    output = rollout_output(episodes)
    result.update(calls=generation.calls, bound_after=generation.max_completion_length,
                  actions=[[json.loads(a)["action_type"] for a in e.actions] for e in episodes],
                  invalid=[e.invalid_actions for e in episodes],
                  logprob_lengths=[len(lp) for lp in output["logprobs"]],
                  completion_lengths=[len(c) for c in output["completion_ids"]])
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main(sys.argv[1])
