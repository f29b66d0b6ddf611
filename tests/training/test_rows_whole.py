"""Rows kept whole: Werewolves decision rows (a scripted log made here, prompts as SmolLM2's) go
through the real SFTTrainer's preprocessing with every completion token kept; rows longer than
the cap are shortened on the prompt side only, as the policy fits its prompt (oldest history lines
first), and rows that cannot fit are
named, never dropped silently. TRL's own truncation at the same length loses completion tokens."""
import json
from types import SimpleNamespace

import pytest

import socialgym_env
from socialgym_agents.runner import EpisodeJob, run_jobs
from socialgym_training.export import decision_rows, export
from socialgym_agents.llm.prompt import OMIT_CHUNK, compose_prompt, fit_history, parse_chat
from socialgym_training.rows import fit_rows, length_report, row_tokens, shorten_prompt


@pytest.fixture(scope="module")
def werewolves_records():
    seats = len(socialgym_env.make("werewolves").possible_agents)
    return run_jobs([EpisodeJob(game="werewolves", seed=seed, seats=["scripted:heuristic"] * seats)
                     for seed in range(2)], log_path=None)


@pytest.fixture(scope="module")
def werewolves_rows(werewolves_records, tokenizer):
    rows = decision_rows(werewolves_records)          # every seat's chat as SmolLM2 would have been given it
    return [{k: row[k] for k in ("prompt", "completion", "episode_id", "turn_index")} for row in rows]


def _completion_tokens(tokenizer, rows):
    return [row_tokens(tokenizer, row["prompt"], row["completion"])[1] for row in rows]


def _trl_labels(model, tokenizer, rows, max_length, out):
    """The train split as SFTTrainer prepares it (tokenize, truncate, drop rows without loss)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer
    args = SFTConfig(output_dir=str(out), max_length=max_length, completion_only_loss=True, packing=False,
                     report_to=[], use_cpu=True, dataset_num_proc=None)
    data = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    return [sum(1 for label in example["labels"] if label != -100) for example in trainer.train_dataset]


def test_trl_keeps_every_completion_token_of_fitted_rows(werewolves_rows, smollm2_base, tokenizer, tmp_path):
    model = smollm2_base[0]
    report = length_report(tokenizer, werewolves_rows)
    cap = report["total"]["p50"]                 # half the rows must be shortened
    kept, max_length, fit = fit_rows(werewolves_rows, tokenizer, ("completion",), 0, cap)
    assert max_length == cap and fit["shortened"] > 0
    assert len(kept) + len(fit["unfit"]) == len(werewolves_rows)
    # what could not fit is named, and really cannot: with every history line omitted it still exceeds the cap
    by_name = {f"{r['episode_id']}:turn {r['turn_index']}": r for r in werewolves_rows}
    for name in fit["unfit"]:
        row = by_name[name]
        assert sum(row_tokens(tokenizer, _bare(row["prompt"]), row["completion"])) > cap
    # through the real trainer: no row dropped, every completion token kept
    assert _trl_labels(model, tokenizer, kept, max_length, tmp_path / "fitted") == _completion_tokens(tokenizer, kept)
    assert all(row["completion"] == by_name[f"{row['episode_id']}:turn {row['turn_index']}"]["completion"]
               for row in kept)
    # the same rows left to TRL's truncation at that length lose completion tokens or whole rows
    cut = _trl_labels(model, tokenizer, werewolves_rows, cap, tmp_path / "cut")
    assert cut != _completion_tokens(tokenizer, werewolves_rows)


def test_default_length_is_what_the_longest_row_needs(werewolves_rows, tokenizer):
    report = length_report(tokenizer, werewolves_rows)
    kept, max_length, fit = fit_rows(werewolves_rows, tokenizer, ("completion",), 0, cap=100_000)
    assert max_length == report["total"]["max"] == fit["longest_row_tokens"]
    assert kept == werewolves_rows and fit["shortened"] == 0 and fit["unfit"] == []
    assert report["prompt"]["p50"] <= report["prompt"]["p90"] <= report["prompt"]["max"]
    longest = max(werewolves_rows, key=lambda r: sum(row_tokens(tokenizer, r["prompt"], r["completion"])))
    assert report["longest"]["row"] == f"{longest['episode_id']}:turn {longest['turn_index']}"


def _bare(prompt):
    """The row's chat with every history line omitted (the least the policy's fitting can send)."""
    parsed = parse_chat(prompt)
    gone = parsed["already_omitted"] + len(parsed["history"])
    bare = compose_prompt(parsed["head"], parsed["history"], parsed["block"], gone, parsed["already_omitted"])
    return parsed["system"] + [{"role": "user", "content": bare}] + parsed["tail"]


def test_shortening_omits_the_oldest_history_lines_as_the_policy_does(werewolves_rows, tokenizer):
    row = max(werewolves_rows, key=lambda r: len(r["prompt"]))
    prompt, completion = row["prompt"], row["completion"]
    assert len(prompt) >= 7
    parsed = parse_chat(prompt)

    def tokens(text):
        return sum(row_tokens(tokenizer, [{"role": "user", "content": text}], completion))
    # a budget one token short of this decision's whole prompt (one message: shorter than the chat)
    budget = tokens(compose_prompt(parsed["head"], parsed["history"], parsed["block"])) - 1
    assert budget < sum(row_tokens(tokenizer, prompt, completion))
    # the policy's own fitting of this decision's whole prompt, to the row's budget
    expected, omitted = fit_history(parsed["head"], parsed["history"], parsed["block"], lambda p: tokens(p) <= budget)
    shorter = shorten_prompt(tokenizer, prompt, [completion], budget)
    assert omitted > 0 and shorter == [{"role": "user", "content": expected}]
    text = shorter[0]["content"]
    assert text.startswith(prompt[0]["content"].split("Here is the context of the interaction:")[0])   # the head
    assert f"[... {omitted} earlier messages omitted ...]" in text and omitted % OMIT_CHUNK == 0
    assert parsed["history"][-1] in text and parsed["history"][0] not in text       # newest kept, oldest gone
    assert sum(row_tokens(tokenizer, shorter, completion)) <= budget
    assert shorten_prompt(tokenizer, prompt, [completion], 10) is None
    assert shorten_prompt(tokenizer, [{"role": "user", "content": "another layout"}], [completion], 10_000) is None


def test_the_sft_script_fits_its_rows_and_names_the_unfit(werewolves_rows, tokenizer, capsys):
    from datasets import Dataset

    from socialgym_training.common import fit_dataset
    cap = length_report(tokenizer, werewolves_rows)["total"]["p50"]
    config = SimpleNamespace(data="werewolves", max_length=0, max_length_cap=cap)
    data, max_length, fit = fit_dataset(Dataset.from_list(werewolves_rows), tokenizer, ("prompt", "completion"), config)
    line = capsys.readouterr().out
    assert data.column_names == ["prompt", "completion"] and max_length == cap
    assert f"{fit['shortened']} of {len(werewolves_rows)} rows shortened" in line
    assert all(name in line for name in fit["unfit"][:10])
    config.max_length_cap = 5
    with pytest.raises(SystemExit) as done:
        fit_dataset(Dataset.from_list(werewolves_rows), tokenizer, ("prompt", "completion"), config)
    assert done.value.code == 2


def test_export_reports_token_lengths(werewolves_records, tokenizer, tmp_path):
    from socialgym_env.logs import append_episode
    log = tmp_path / "werewolves.jsonl"
    for record in werewolves_records:
        append_episode(log, record)
    summary = export("sft", [log], tmp_path / "sft", tokenizer="smollm2")
    lengths = json.loads((tmp_path / "sft" / "export.json").read_text())["token_lengths"]
    assert lengths == summary["token_lengths"] and lengths["tokenizer"] == "smollm2"
    assert lengths["rows"] == sum(summary["rows"].values())
    assert 0 < lengths["completion"]["max"] < lengths["prompt"]["p50"] <= lengths["total"]["max"]


def test_dpo_pairs_fit_whole_through_the_real_trainer(werewolves_rows, smollm2_base, tokenizer, tmp_path):
    """DPO: the longer of chosen and rejected sets a pair's length; after fitting, DPOTrainer's
    preprocessing keeps every pair, and no pair exceeds max_length (its collator would cut the end)."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer
    pairs = [{"prompt": r["prompt"], "chosen": r["completion"],
              "rejected": [{"role": "assistant", "content": '{"action_type": "pass", "argument": "' + "x" * 40 + '"}'}],
              "episode_id": r["episode_id"], "turn_index": r["turn_index"]} for r in werewolves_rows]
    cap = length_report(tokenizer, pairs, ("chosen", "rejected"))["total"]["p50"]
    kept, max_length, fit = fit_rows(pairs, tokenizer, ("chosen", "rejected"), 0, cap)
    assert fit["shortened"] > 0 and len(kept) + len(fit["unfit"]) == len(pairs)
    args = DPOConfig(output_dir=str(tmp_path), max_length=max_length, report_to=[], use_cpu=True)
    data = Dataset.from_list([{k: p[k] for k in ("prompt", "chosen", "rejected")} for p in kept])
    trainer = DPOTrainer(model=smollm2_base[0], args=args, train_dataset=data, processing_class=tokenizer)
    processed = trainer.train_dataset
    assert len(processed) == len(kept)
    for example in processed:
        longest = max(len(example["chosen_ids"]), len(example["rejected_ids"]))
        assert len(example["prompt_ids"]) + longest <= max_length
