"""SFT and DPO smoke runs: a few LoRA steps on SmolLM2 with tiny chat data save an adapter, a
config and metrics; a rerun resumes from the last checkpoint; the backend loads both adapters
and they play an episode against each other."""
import contextlib
import io
import json

import pytest

from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs

DEFECT = '{"action_type": "defect", "argument": ""}'
COOPERATE = '{"action_type": "cooperate", "argument": ""}'
FAST = ["--lora_targets", "q_proj,v_proj", "--lora_r", "4", "--grad_accum", "1", "--learning_rate", "1e-3",
        "--save_steps", "1", "--logging_steps", "1", "--max_length", "64"]


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "tiny.jsonl"
    rows = [{"prompt": [{"role": "user", "content": f"Round {i}: cooperate or defect? Reply in JSON."}],
             "completion": [{"role": "assistant", "content": DEFECT}],
             "chosen": [{"role": "assistant", "content": DEFECT}],
             "rejected": [{"role": "assistant", "content": COOPERATE}]} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def trained(smollm2_available, tiny_data, tmp_path_factory):
    from socialgym_training import dpo, sft
    root = tmp_path_factory.mktemp("runs")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        sft_first = sft.main(["--data", str(tiny_data), "--out", str(root / "sft"), "--max_steps", "1", *FAST])
    sft_first["printed"] = printed.getvalue()
    sft_resumed = sft.main(["--data", str(tiny_data), "--out", str(root / "sft"), "--max_steps", "2", *FAST])
    dpo_run = dpo.main(["--data", str(tiny_data), "--out", str(root / "dpo"), "--max_steps", "1", *FAST])
    return root, sft_first, sft_resumed, dpo_run


def test_runs_write_adapter_config_metrics_and_resume(trained):
    root, sft_first, sft_resumed, dpo_run = trained
    for name in ("sft", "dpo"):
        assert (root / name / "adapter" / "adapter_config.json").is_file()
        assert json.loads((root / name / "config.json").read_text())["lora_r"] == 4
        metrics = json.loads((root / name / "metrics.json").read_text())
        assert any("loss" in h for h in metrics["log_history"])
    assert sft_first["global_step"] == 1 and sft_first["resumed_from"] is None
    # the run says where the adapter went (it once ended in silence)
    assert f"adapter: {root / 'sft' / 'adapter'} (play it: --agents 'smollm2?adapter=" in sft_first["printed"]
    assert sft_resumed["global_step"] == 2 and sft_resumed["resumed_from"].endswith("checkpoint-1")
    assert dpo_run["global_step"] == 1 and dpo_run["pairs"] == 4


def test_backend_loads_the_trained_adapters_and_plays(trained):
    root = trained[0]
    seats = [f"smollm2?adapter={root / 'sft' / 'adapter'}&max_new_tokens=16&max_retries=0",
             f"smollm2?adapter={root / 'dpo' / 'adapter'}&max_new_tokens=16&max_retries=0"]
    record = run_jobs([EpisodeJob("prisoners_dilemma", 1, seats, config={"rounds": 1})], PolicyPool())[0]
    assert record["finished"] and not record.get("failed")
    assert {t["agent_meta"]["policy"] for t in record["turns"]} == set(seats)
