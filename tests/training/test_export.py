"""socialgym_training.export: decision rows, filters, episode splits, the saved datasets, the CLI."""
import json

import pytest
import typer
from typer.testing import CliRunner

from socialgym_env.logs import read_episodes, replay_observations, restore_env
from socialgym_training.cli import register
from socialgym_training.export import (ExportFilter, decision_rows, export, in_test_split, load_records, sft_dataset,
                                       split_episodes)

from helpers import EPISODES


def test_rows_match_the_log(pd_log):
    records = list(load_records([pd_log]))
    rows = decision_rows(records)
    # 3 rounds x 2 seats per episode: the LLM seat's rows and the scripted seat's (rebuilt).
    assert len(rows) == EPISODES * 3 * 2
    by_id = {r["episode_id"]: r for r in read_episodes(pd_log)}
    llm_rows = [r for r in rows if r["policy"] == "fake-llm"]
    assert len(llm_rows) == EPISODES * 3
    for row in llm_rows:
        turn = by_id[row["episode_id"]]["turns"][row["turn_index"]]
        attempts = turn["agent_meta"]["attempts"]
        # the whole conversation, its newest user message the one logged, then any re-asks
        assert row["prompt"][0]["content"].startswith("Here is the description of the game:")
        first_reask = 2 * row["reasks"]
        newest = row["prompt"][-1 - first_reask] if row["reasks"] else row["prompt"][-1]
        assert newest == {"role": "user", "content": attempts[0]["prompt"]}
        assert [m["content"] for m in row["prompt"][len(row["prompt"]) - first_reask:][1::2]] == \
            [a["reask"] for a in attempts[1:]]
        assert row["messages"] == row["prompt"] + row["completion"]
        assert row["completion"][0]["content"] == [a for a in attempts if "reply" in a][-1]["reply"]
        assert row["seat"] == turn["agent"] == "player_0" and row["prompt_as"] == "logged"
        assert row["outcome"] == by_id[row["episode_id"]]["outcomes"]["player_0"]
        assert row["reward"] == by_id[row["episode_id"]]["rewards"]["player_0"]
        assert (row["game"], row["round"], row["phase"], row["seed"]) == \
            ("prisoners_dilemma", turn["round"], turn["phase"], by_id[row["episode_id"]]["seed"])
        # a later turn holds every earlier turn of the seat: user, assistant, ..., user
        assert [m["role"] for m in row["prompt"]][:2 * row["round"] - 1] == \
            ["user", "assistant"] * (row["round"] - 1) + ["user"]
    assert any(r["reasks"] for r in llm_rows) and any(not r["reasks"] for r in llm_rows)
    scripted = [r for r in rows if r["policy"] == "scripted:random"]
    assert scripted and all(r["prompt_as"] == "smollm2" and r["seat"] == "player_1" for r in scripted)
    for row in scripted:   # the seat's played action as the JSON reply the LLM policy writes
        action = by_id[row["episode_id"]]["turns"][row["turn_index"]]["action"]
        assert json.loads(row["completion"][0]["content"]) == {"action_type": action, "argument": ""}


def test_filters(pd_log):
    records = list(load_records([pd_log]))
    everything = decision_rows(records)
    winners = decision_rows(records, ExportFilter(outcomes=["win"]))
    legal = decision_rows(records, ExportFilter(legal_only=True))
    assert winners and len(winners) == sum(r["outcome"] == "win" for r in everything) < len(everything)
    assert len(legal) == sum(r["valid"] and not r["fallback"] and not r["reasks"] for r in everything) < len(everything)
    assert decision_rows(records, ExportFilter(policies=["fake*"])) == [r for r in everything
                                                                        if r["policy"] == "fake-llm"]
    assert decision_rows(records, ExportFilter(policies=["smollm2*"])) == []
    assert decision_rows(records, ExportFilter(games=["chess"])) == []
    with pytest.raises(ValueError, match="valid: win, draw, loss"):
        ExportFilter(outcomes=["won"])


def test_no_episode_in_two_splits(pd_log):
    rows = decision_rows(list(load_records([pd_log])))
    data = sft_dataset(rows, test_fraction=0.25, seed=3)
    train, test = set(data["train"]["episode_id"]), set(data["test"]["episode_id"])
    assert not train & test and train
    assert test == {r["episode_id"] for r in rows if in_test_split(r["episode_id"], 0.25, 3)}
    assert len(data["train"]) + len(data["test"]) == len(rows)


def test_an_episodes_split_is_its_own():
    """The side of an episode depends on its id, the seed and the fraction only: not on which
    other episodes the export holds (the bug: DPO shuffled only episodes with pairs)."""
    ids = [f"werewolves-{seed}" for seed in range(2000)]
    whole = split_episodes(ids, 0.3, seed=1)
    assert split_episodes(ids[::3], 0.3, seed=1) == whole & set(ids[::3])
    assert split_episodes(ids[500:], 0.3, seed=1) == whole & set(ids[500:])
    # planted: the share of test episodes is the fraction (binomial 99.9% band), and seeds differ
    from scipy.stats import binom
    low, high = binom.interval(0.999, len(ids), 0.3)
    assert low <= len(whole) <= high
    assert split_episodes(ids, 0.3, seed=2) != whole and split_episodes(ids, 0.0, seed=1) == set()
    assert split_episodes(ids, 0.1, seed=1) <= split_episodes(ids, 0.3, seed=1)    # a larger fraction adds episodes


def test_one_split_for_every_export(pd_log, detection_log_dir, tmp_path):
    """SFT, DPO, GRPO and detector exports put every episode on the side in_test_split gives it,
    so an SFT-then-DPO run never evaluates on an episode either stage trained on."""
    from socialgym_training.branching import BranchConfig
    from socialgym_training.detection_data import load_examples, split_episodes as detector_split
    fraction, seed = 0.4, 5
    sides = {}
    for kind in ("sft", "grpo", "dpo"):
        export(kind, [pd_log], tmp_path / kind, test_fraction=fraction, seed=seed,
               branch=BranchConfig(candidates=2, rollouts=8), rollout_policy="scripted:random")
        sides[kind] = {name: {json.loads(l)["episode_id"] for l in (tmp_path / kind / f"{name}.jsonl").read_text().splitlines()}
                       for name in ("train", "test")}
    sft_sides = sides["sft"]
    assert sft_sides["train"] and sft_sides["test"]
    assert sides["dpo"]["train"] | sides["dpo"]["test"] < sft_sides["train"] | sft_sides["test"]   # pairs: some episodes
    for kind, split in sides.items():
        for name in ("train", "test"):
            assert split[name] <= sft_sides[name], (kind, name)
            assert all(in_test_split(e, fraction, seed) == (name == "test") for e in split[name]), (kind, name)
    train, test = detector_split(load_examples(detection_log_dir), fraction, seed)
    assert train and test
    for examples, side in ((train, False), (test, True)):
        assert all(in_test_split(ex.episode_id, fraction, seed) is side for ex in examples)


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
    result = CliRunner().invoke(app, ["export", kind, str(pd_log), "--out", str(out), "--test-fraction", "0.25",
                                      "--rollout-policy", "scripted:random", "--candidates", "2"])
    assert result.exit_code == 0, result.output
    data = load_from_disk(str(out))
    lines = [json.loads(l) for l in (out / "train.jsonl").read_text().splitlines()]
    assert len(lines) == len(data["train"]) > 0
    expected = {"sft": {"messages", "prompt", "completion"}, "grpo": {"prompt", "prefix_actions"},
                "dpo": {"prompt", "chosen", "rejected", "variant"}}[kind]
    assert expected <= set(data["train"].column_names)
    if kind == "dpo":
        assert set(data["train"]["variant"]) == {"branching"}
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
    mine = tmp_path / "notes"                  # a folder of the user's: never replaced by an export
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    result = runner.invoke(app, ["export", "sft", str(pd_log), "--out", str(mine)])
    assert result.exit_code == 2 and "already holds other files (no export.json)" in result.output
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_dpo_pairs_stay_at_their_state_and_in_their_split(pd_log, tmp_path):
    """Both replies of a pair were generated at the pair's own decision (same episode, same
    turn), were legal there, and an episode's pairs are all on one side of the split."""
    from socialgym_training.branching import BranchConfig
    out = tmp_path / "dpo"
    export("dpo", [pd_log], out, test_fraction=0.25, branch=BranchConfig(candidates=2, rollouts=8),
           rollout_policy="scripted:random")
    splits = {name: [json.loads(l) for l in (out / f"{name}.jsonl").read_text().splitlines()]
              for name in ("train", "test")}
    assert splits["train"] and splits["test"]
    episodes = {name: {p["episode_id"] for p in pairs} for name, pairs in splits.items()}
    assert not episodes["train"] & episodes["test"]
    records = {r["episode_id"]: r for r in load_records([pd_log])}
    rows = {(r["episode_id"], r["turn_index"]): r for r in decision_rows(list(records.values()))}
    for pair in splits["train"] + splits["test"]:
        assert pair["chosen_episode_id"] == pair["rejected_episode_id"] == pair["episode_id"]
        row = rows[(pair["episode_id"], pair["turn_index"])]
        assert pair["prompt"] == row["prompt"] and pair["seat"] == row["seat"]   # the state's whole chat
        record = records[pair["episode_id"]]
        env = restore_env(record["game"], record["config"], record["seed"], record["episode_id"],
                          [t["raw"] for t in record["turns"][:pair["turn_index"]]])
        legal = env.infos[pair["seat"]]["legal_action_list"]
        assert pair["chosen_action"] in legal and pair["rejected_action"] in legal
        assert pair["chosen_action"] != pair["rejected_action"] and pair["p_value"] < 0.05
