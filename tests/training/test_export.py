"""training.export: decision rows, filters, episode splits, the saved datasets, the CLI."""
import json

import pytest
import typer
from typer.testing import CliRunner

from socialgym_env.logs import read_episodes, replay_observations
from training.cli import register
from training.export import ExportFilter, decision_rows, export, load_records, restore_env, sft_dataset

from conftest import EPISODES


def test_rows_match_the_log(pd_log):
    records = list(load_records([pd_log]))
    rows = decision_rows(records)
    # 3 rounds x 1 LLM seat per episode: one row per LLM decision, none for the scripted seat.
    assert len(rows) == EPISODES * 3
    by_id = {r["episode_id"]: r for r in read_episodes(pd_log)}
    for row in rows:
        turn = by_id[row["episode_id"]]["turns"][row["turn_index"]]
        assert row["prompt"] == [{"role": "user", "content": turn["agent_meta"]["attempts"][0]["prompt"]}]
        assert row["messages"][0]["content"] == turn["agent_meta"]["attempts"][0]["prompt"]
        assert row["completion"][0]["content"] == [a for a in turn["agent_meta"]["attempts"] if "reply" in a][-1]["reply"]
        assert row["seat"] == turn["agent"] == "player_0" and row["policy"] == "fake-llm"
        assert row["outcome"] == by_id[row["episode_id"]]["outcomes"]["player_0"]
        assert row["reward"] == by_id[row["episode_id"]]["rewards"]["player_0"]
        assert (row["game"], row["round"], row["phase"], row["seed"]) == \
            ("prisoners_dilemma", turn["round"], turn["phase"], by_id[row["episode_id"]]["seed"])
    assert any(r["reasks"] for r in rows) and any(not r["reasks"] for r in rows)


def test_filters(pd_log):
    records = list(load_records([pd_log]))
    everything = decision_rows(records)
    winners = decision_rows(records, ExportFilter(outcomes=["win"]))
    legal = decision_rows(records, ExportFilter(legal_only=True))
    assert winners and len(winners) == sum(r["outcome"] == "win" for r in everything) < len(everything)
    assert len(legal) == sum(r["valid"] and not r["fallback"] and not r["reasks"] for r in everything) < len(everything)
    assert decision_rows(records, ExportFilter(policies=["fake*"])) == everything
    assert decision_rows(records, ExportFilter(policies=["smollm2*"])) == []
    assert decision_rows(records, ExportFilter(games=["chess"])) == []
    with pytest.raises(ValueError, match="valid: win, draw, loss"):
        ExportFilter(outcomes=["won"])


def test_no_episode_in_two_splits(pd_log):
    rows = decision_rows(list(load_records([pd_log])))
    data = sft_dataset(rows, test_fraction=0.25, seed=3)
    train, test = set(data["train"]["episode_id"]), set(data["test"]["episode_id"])
    assert not train & test
    assert len(test) == 2 and len(train) == EPISODES - 2
    assert len(data["train"]) + len(data["test"]) == len(rows)


def test_restore_env_rebuilds_the_decision_point(pd_log):
    record = next(iter(read_episodes(pd_log)))
    index = 3
    env = restore_env(record["game"], record["config"], record["seed"], record["episode_id"],
                      [t["raw"] for t in record["turns"][:index]])
    assert env.agent_selection == record["turns"][index]["agent"]
    # the exact view the seat had (replay_observations is checked against fully logged
    # observations of every game in tests/test_bounded_logs.py)
    assert env.observation_text(env.agent_selection) == replay_observations(record)[index]


@pytest.mark.parametrize("kind", ["sft", "dpo", "grpo"])
def test_cli_writes_datasets_and_jsonl(pd_log, tmp_path, kind):
    from datasets import load_from_disk
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)   # a second command, so "export" is a subcommand name
    out = tmp_path / kind
    result = CliRunner().invoke(app, ["export", kind, str(pd_log), "--out", str(out), "--test-fraction", "0.25"])
    assert result.exit_code == 0, result.output
    data = load_from_disk(str(out))
    lines = [json.loads(l) for l in (out / "train.jsonl").read_text().splitlines()]
    assert len(lines) == len(data["train"]) > 0
    expected = {"sft": {"messages", "prompt", "completion"}, "grpo": {"prompt", "prefix_actions"},
                "dpo": {"prompt", "chosen", "rejected", "variant"}}[kind]
    assert expected <= set(data["train"].column_names)
    if kind == "dpo":
        assert set(data["train"]["variant"]) == {"cross_episode"}
        assert all(r["chosen"] != r["rejected"] for r in lines)
    summary = json.loads((out / "export.json").read_text())
    assert summary["rows"]["train"] == len(data["train"])


def test_cli_bad_input_is_a_one_line_error(pd_log, tmp_path):
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)
    runner = CliRunner()
    result = runner.invoke(app, ["export", "ppo", str(pd_log), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "valid: sft, dpo, grpo" in result.output
    result = runner.invoke(app, ["export", "sft", str(pd_log), "--out", str(tmp_path / "x"), "--outcome", "won"])
    assert result.exit_code == 2 and "valid: win, draw, loss" in result.output
    result = runner.invoke(app, ["export", "sft", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "no log file" in result.output
