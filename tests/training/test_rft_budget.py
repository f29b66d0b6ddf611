"""Rejection-sampling fine-tuning's row filter and the one-budget comparison's resumable loop."""
import json

import numpy as np
import pytest

from socialgym_agents.llm.decision_head import DecisionHead

from head_fakes import HIDDEN, play_werewolves


@pytest.fixture(scope="module")
def logged_episodes(tmp_path_factory):
    """Werewolves episodes whose wolves are a (model-free) head policy, at least one won and one
    lost by the wolves, written as an episode log."""
    folder = tmp_path_factory.mktemp("rft")
    head = DecisionHead.fresh(HIDDEN)
    head.weights[1:] = np.random.default_rng(5).normal(0, 1, HIDDEN)
    head.save(folder / "h.json")
    records = []
    for seed in range(12):
        record, _ = play_werewolves(folder / "h.json", seed)
        record["episode_id"] = f"t{seed}"
        records.append(record)
        wolves_won = [r for r in records if r["outcomes"][_wolves(r)[0]] == "win"]
        if wolves_won and len(wolves_won) < len(records) and len(records) >= 3:
            break
    log = folder / "play.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    return log, records


def _wolves(record) -> list:
    return [s["agent"] for s in record["roster"] if s["team"] == "werewolves"]


def test_rft_keeps_only_the_won_episodes_decisions_with_the_whole_chat(logged_episodes):
    from socialgym_training.rft import winning_rows
    log, records = logged_episodes
    rows = winning_rows([log], "werewolves")
    won = {r["episode_id"] for r in records if r["outcomes"][_wolves(r)[0]] == "win"}
    assert won and len(won) < len(records)           # the fixture holds both kinds
    assert rows and {r["episode_id"] for r in rows} == won
    by_id = {r["episode_id"]: r for r in records}
    for row in rows:
        record = by_id[row["episode_id"]]
        assert row["seat"] in _wolves(record) and row["outcome"] == "win"
        turn = record["turns"][row["turn_index"]]
        # the prompt is the whole chat the seat saw: its newest message is the logged one, and a
        # later decision carries the seat's earlier replies
        assert row["prompt"][-1]["content"] == turn["agent_meta"]["attempts"][0]["prompt"]
        assert row["completion"][0]["content"] == turn["agent_meta"]["attempts"][0]["reply"]
        earlier = [t for t in record["turns"][:row["turn_index"]] if t["agent"] == row["seat"]
                   and (t.get("agent_meta") or {}).get("attempts")]
        replies = [m["content"] for m in row["prompt"] if m["role"] == "assistant"]
        assert replies == [t["agent_meta"]["attempts"][0]["reply"] for t in earlier]
    # every wolf decision of the won episodes is there
    expected = sum(1 for r in records if r["episode_id"] in won for t in r["turns"]
                   if t["agent"] in _wolves(r) and (t.get("agent_meta") or {}).get("attempts"))
    assert len(rows) == expected


def test_rft_command_writes_the_rows_and_refuses_logs_without_a_win(logged_episodes, tmp_path):
    """``python -m socialgym_training.rft``: the won decisions as an SFT dataset; a side that
    never won is one line and exit 2, nothing written."""
    from socialgym_training import rft
    log, records = logged_episodes
    summary = rft.main(["--logs", str(log), "--side", "werewolves", "--out", str(tmp_path / "rows")])
    assert summary["rows"]["train"] == len(rft.winning_rows([log], "werewolves")) > 0
    assert (tmp_path / "rows" / "train.jsonl").is_file()
    with pytest.raises(SystemExit) as stop:
        rft.main(["--logs", str(log), "--side", "werewolves", "--policy", "openai:*", "--out", str(tmp_path / "none")])
    assert stop.value.code == 2 and not (tmp_path / "none").exists()


def test_budget_resumes_where_it_stopped(tmp_path, monkeypatch):
    """A run killed in the middle skips, when run again, every (method, iteration) already in
    results.jsonl, and the summary pairs each method with the base by deal."""
    from socialgym_training import budget
    calls = []

    def fake_evaluate(config, pool, spec, name):
        calls.append(("eval", name))
        return {str(s): int(name.startswith("head") or s % 2 == 0) for s in budget.eval_seeds(config)}

    def trainer(method, fail_at=None):
        def train(config, pool, iteration):
            if (method, iteration) == fail_at:
                raise KeyboardInterrupt
            calls.append((method, iteration))
            return f"spec-{method}-{iteration}", {}
        return train

    monkeypatch.setattr(budget, "evaluate", fake_evaluate)
    monkeypatch.setattr(budget, "TRAINERS", {"rft": trainer("rft"), "head": trainer("head", ("head", 2)),
                                             "grpo": trainer("grpo")})
    argv = ["--methods", "rft,head", "--iterations", "2", "--eval_seeds", "8", "--out", str(tmp_path)]
    with pytest.raises(KeyboardInterrupt):
        budget.main(argv)
    assert calls == [("eval", "base-0"), ("rft", 1), ("eval", "rft-1"), ("rft", 2), ("eval", "rft-2"),
                     ("head", 1), ("eval", "head-1")]
    calls.clear()
    monkeypatch.setattr(budget, "TRAINERS", {"rft": trainer("rft"), "head": trainer("head"), "grpo": trainer("grpo")})
    summary = budget.main(argv)
    assert calls == [("head", 2), ("eval", "head-2")]
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 5
    head2 = summary["head"][1]
    assert head2["k"] == 8 and head2["low"] < 1.0 and head2["vs_base"]["points"] == pytest.approx(50.0)
    assert head2["vs_base"]["p"] == pytest.approx(2 * 0.5 ** 4)     # exact McNemar: 4 discordant, all one way
    assert summary["rft"][0]["vs_base"]["points"] == 0.0
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_budget_refuses_bad_options(tmp_path):
    from socialgym_training import budget
    for argv, message in ((["--methods", "rft,dpo"], "--methods"), (["--side", "village_x"], "no team"),
                          (["--episodes", "0"], "at least 1")):
        with pytest.raises(SystemExit) as stop:
            budget.main(argv + ["--out", str(tmp_path)])
        assert stop.value.code == 2
