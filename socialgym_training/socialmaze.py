"""The SocialMaze recipe: SFT and DPO data from Hidden Role Deduction with verifier-checked
answers, and held-out accuracy of a model (optionally with a trained adapter).

    python -m socialgym_training.socialmaze data --out runs/hrd                        # 2000 SFT rows, 1100 pairs, 500 test
    python -m socialgym_training.socialmaze data --out runs/hrd --sft 300 --dpo 300 --test 200   # CPU-sized
    python -m socialgym_training.sft --data runs/hrd/sft --out runs/hrd_sft ...
    python -m socialgym_training.socialmaze evaluate --test runs/hrd/test.jsonl --adapter runs/hrd_sft/adapter --out acc.json

``data`` writes ``OUT/sft`` and ``OUT/dpo`` (``datasets`` folders, ``train`` split, plus JSONL) and
``OUT/test.jsonl`` (SocialMaze instances, the ``socialgym maze`` format). Each part comes from
its own seed stream (``seed``, ``seed+1``, ``seed+2``) and test puzzles whose prompt also occurs
in the training parts are dropped. Every answer is checked with the exact verifier:
- SFT: prompt = the puzzle, completion = ``Criminal: Player c; My role: R`` (the unique answer);
- DPO: chosen = the correct answer, rejected = an incorrect one: the naive heuristic's answer
  when it is wrong (a plausible mistake), else a random wrong (criminal, role); both scored.

``evaluate`` answers each test puzzle with greedy decoding (one user message, as in training)
and scores it with the SocialMaze parser; accuracy (both parts right) with a 95% Wilson interval.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Optional

import typer

from socialgym_env.atomic import atomic_write_text
from socialgym_env.socialmaze.baselines import exact_answer, format_answer, heuristic_answer
from socialgym_env.socialmaze.dataset import generate_dataset, read_jsonl, write_jsonl
from socialgym_env.socialmaze.instance import MazeConfig, MazeInstance, Role
from socialgym_env.socialmaze.scoring import score_answer

app = typer.Typer(help="SocialMaze Hidden Role Deduction: training data and held-out accuracy.",
                  no_args_is_help=True, add_completion=False)


def _messages(instance: MazeInstance) -> list:
    return [{"role": "user", "content": instance.prompt()}]


def _columns(instance: MazeInstance) -> dict:
    return {"episode_id": instance.id, "seed": instance.seed, "criminal": instance.criminal,
            "role": instance.player1_role.value, "told_role": instance.told_role.value}


def correct_answer(instance: MazeInstance) -> str:
    answer = exact_answer(instance.puzzle)
    if score_answer(answer, instance).reward != 1.0:    # the verifier and the parser must agree
        raise ValueError(f"{instance.id}: the exact answer {answer!r} does not score")
    return answer


def wrong_answer(instance: MazeInstance, rng: random.Random) -> str:
    """An answer the verifier rejects: the heuristic's when it is wrong, else a random wrong one."""
    guess = heuristic_answer(instance.puzzle)
    if score_answer(guess, instance).reward == 0.0:
        return guess
    n = instance.config.n_players
    while True:
        answer = format_answer(rng.randint(1, n), rng.choice(list(Role)))
        if score_answer(answer, instance).reward == 0.0:
            return answer


def sft_rows(instances) -> list[dict]:
    return [{"prompt": _messages(i), "completion": [{"role": "assistant", "content": correct_answer(i)}],
             **_columns(i)} for i in instances]


def dpo_rows(instances, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"prompt": _messages(i), "chosen": [{"role": "assistant", "content": correct_answer(i)}],
             "rejected": [{"role": "assistant", "content": wrong_answer(i, rng)}], **_columns(i)}
            for i in instances]


def build_data(out: str, n_sft: int, n_dpo: int, n_test: int, seed: int = 0, preset: str = "easy",
               variant: str = "full") -> dict:
    """Write OUT/sft, OUT/dpo (datasets with a train split, plus JSONL) and OUT/test.jsonl."""
    from datasets import Dataset, DatasetDict

    from socialgym_training.export import save_dataset
    config = MazeConfig.from_preset(preset, variant)
    sft_part = generate_dataset(n_sft, seed, config)
    dpo_part = generate_dataset(n_dpo, seed + 1, config)
    seen = {i.prompt() for i in sft_part + dpo_part}
    test = [i for i in generate_dataset(n_test, seed + 2, config) if i.prompt() not in seen]
    meta = {"preset": preset, "variant": variant, "seed": seed}
    summary = {"sft": save_dataset(DatasetDict(train=Dataset.from_list(sft_rows(sft_part))), Path(out) / "sft", meta),
               "dpo": save_dataset(DatasetDict(train=Dataset.from_list(dpo_rows(dpo_part, seed))), Path(out) / "dpo",
                                   meta),
               "test": write_jsonl(test, Path(out) / "test.jsonl")}
    return summary


def evaluate_model(model: str, instances, adapter: str = "", max_new_tokens: int = 24, batch_size: int = 16,
                   threads: int = 0) -> dict:
    """Greedy answers of a local model (``smollm2`` / ``hf:...``, optionally with an adapter) to each
    puzzle, scored; accuracy with a 95% Wilson interval, and the two parts separately."""
    from socialgym_agents.llm.backend import Completion
    from socialgym_agents.llm.config import LLMConfig
    from socialgym_agents.llm.hf_backend import HFBackend
    from scipy.stats import binomtest
    name = model[3:] if model.startswith("hf:") else model
    backend = HFBackend(name, LLMConfig(max_new_tokens=max_new_tokens, batch_size=batch_size, stop_at_json=False,
                                        threads=threads, adapter=adapter))
    scores = []
    # One cache key for every puzzle: the backend then reuses the K/V of the shared prompt prefix
    # (system prompt, rules, ~40% of the tokens) from the previous batch instead of re-encoding it.
    key = ("hrd", "shared-prefix")
    for start in range(0, len(instances), batch_size):
        chunk = instances[start:start + batch_size]
        for instance, reply in zip(chunk, backend.complete([Completion(key, _messages(i)) for i in chunk])):
            if isinstance(reply, BaseException):
                raise reply
            scores.append((instance.id, reply.text, score_answer(reply.text, instance)))
    backend.release(key)
    n = len(scores)
    correct = int(sum(s.reward for _, _, s in scores))
    interval = binomtest(correct, n).proportion_ci(0.95, method="wilson") if n else None
    low, high = (interval.low, interval.high) if interval else (0.0, 1.0)
    return {"model": model, "adapter": adapter or None, "n": n, "accuracy": correct / n if n else 0.0,
            "ci95": [low, high], "criminal_accuracy": sum(s.criminal_correct for _, _, s in scores) / max(n, 1),
            "role_accuracy": sum(s.role_correct for _, _, s in scores) / max(n, 1),
            "answers": [{"id": i, "reply": text, "reward": s.reward} for i, text, s in scores]}


@app.command()
def data(out: str = typer.Option("runs/hrd", help="output folder"),
         sft: int = typer.Option(2000, help="SFT examples (the paper: 2000)"),
         dpo: int = typer.Option(1100, help="DPO pairs (the paper: 1100)"),
         test: int = typer.Option(500, help="held-out test puzzles (the paper: 500)"),
         seed: int = typer.Option(0, help="seed of the SFT stream (DPO: seed + 1, test: seed + 2)"),
         preset: str = typer.Option("easy", help="SocialMaze preset (easy: 6 players)"),
         variant: str = typer.Option("full", help="original / rumormonger / lunatic / full")):
    """Write the SFT rows, DPO pairs and test puzzles."""
    try:
        summary = build_data(out, sft, dpo, test, seed, preset, variant)
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    typer.echo(json.dumps({"out": out, "sft": summary["sft"]["rows"], "dpo": summary["dpo"]["rows"],
                           "test": summary["test"]}))


@app.command()
def evaluate(test: str = typer.Option(..., help="test puzzles (JSONL from `data` or `socialgym maze generate`)"),
             model: str = typer.Option("smollm2", help="smollm2 or hf:<folder>"),
             adapter: str = typer.Option("", help="a trained LoRA adapter folder (OUT/adapter)"),
             n: int = typer.Option(0, help="first n puzzles (0 = all)"),
             max_new_tokens: int = typer.Option(24, help="answer length bound (tokens)"),
             threads: int = typer.Option(2, help="torch CPU threads"),
             out: Optional[str] = typer.Option(None, help="write the result (with every answer) as JSON")):
    """Held-out accuracy of a model (plus adapter) on HRD puzzles, with a 95% Wilson interval."""
    if not Path(test).is_file():
        typer.echo(f"error: no test puzzle file at {test}", err=True)
        raise typer.Exit(2)
    if adapter and not (Path(adapter) / "adapter_config.json").is_file():
        typer.echo(f"error: no trained adapter at {adapter} (a folder with adapter_config.json, OUT/adapter)", err=True)
        raise typer.Exit(2)
    instances = read_jsonl(test)
    instances = instances[:n] if n else instances
    result = evaluate_model(model, instances, adapter, max_new_tokens, threads=threads)
    if out:
        atomic_write_text(out, json.dumps(result, indent=2) + "\n")
    typer.echo(json.dumps({k: v for k, v in result.items() if k != "answers"}))


if __name__ == "__main__":
    import sys

    from socialgym_env.cli_errors import invoke_typer, main_of
    main_of(lambda: invoke_typer(app, sys.argv[1:], "socialgym_training.socialmaze"), "socialgym_training.socialmaze")
