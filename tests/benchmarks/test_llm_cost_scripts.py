"""The scripts that measure the main job's cost (socialgym_benchmarks/perf: demo_cost, llm_memory,
cpu_peak) run in a tiny configuration and report what they say they report."""
import os
import re
import sys

import pytest

from socialgym_benchmarks.perf import cpu_peak, demo_cost, llm_memory


def test_demo_cost_runs_the_makefiles_one_job():
    [main] = demo_cost.demo_commands("runs/x", python="python3")
    assert main.startswith("python3 -m socialgym_env.cli tournament --preset demo") and main.endswith("--out runs/x")
    # the improvement loop is the main job's Liar's Dice: its own roster, on the game the LoRA was trained on
    roster = re.search(r'--roster "liars_dice=([^"]+)"', main).group(1).split(",")
    assert [spec.split("?")[0] for spec in roster] == ["smollm2", "smollm2", "scripted:heuristic"]
    assert "adapter=socialgym_agents/adapters/smollm2_selfplay_liars_dice" in roster[1]
    assert "-c liars_dice.num_players=2 -c liars_dice.dice=1" in main
    assert re.search(r"--game-episodes liars_dice=[1-9][0-9]*", main)


def test_demo_cost_puts_the_demos_base_smollm2_specs_on_a_runtime_and_leaves_the_adapter_on_torch():
    [main] = demo_cost.demo_commands("runs/x", python="python3")
    changed, kept = demo_cost.with_runtime(main, "openvino")
    specs = re.findall(r'(?<=[",=])smollm2[^,"\s]*', changed)
    assert len(specs) == 3 and len(kept) == 1 and "adapter=" in kept[0]
    assert [s.endswith("runtime=openvino") for s in specs] == [True, True, False]
    assert "adapters/smollm2_selfplay_liars_dice" in changed          # a path that names smollm2 is untouched
    assert demo_cost.with_runtime('--agents "smollm2,scripted:random"', "onnxruntime")[0] == \
        '--agents "smollm2?runtime=onnxruntime,scripted:random"'


def test_demo_cost_reports_each_jobs_own_cpu_time_and_peak_rss(capsys):
    grow = f"{sys.executable} -c \"x = bytearray(300 * 2**20); sum(range(3 * 10**6))\""
    small, big = demo_cost.main(["--command", f"{sys.executable} -c pass", "--command", grow])
    assert small["rc"] == big["rc"] == 0
    assert big["peak_rss_mb"] > 300 > small["peak_rss_mb"]       # per child, not the largest so far
    assert big["cpu_s"] > small["cpu_s"]
    assert "CPU:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        demo_cost.main(["--command", f"{sys.executable} -c 'raise SystemExit(3)'"])


@pytest.mark.parametrize("dtype", ["float32", "int8", "bfloat16-packed"])
def test_cpu_peak_prints_the_peaks_and_the_runners_ratios(smollm2_available, capsys, dtype):
    out = cpu_peak.main(["--tokens", "64", "--prefill", "2x32", "--decode", "2", "--context", "16", "--reps", "1",
                         "--dtype", dtype])
    assert set(out["peaks"]) == {"float32", "bfloat16", "bfloat16-packed", "int8"} and \
        all(v > 0 for v in out["peaks"].values())
    assert out["prefill_tokens_s"][0] > 0 and out["decode_tokens_s"][0] > 0
    assert 0 < out["ratios"]["prefill"] and 0 < out["ratios"]["decode"]
    assert f"of the {dtype} peak" in capsys.readouterr().out


def test_llm_memory_splits_the_peak_of_a_small_batch(smollm2_available):
    out = llm_memory.main(["--batch", "1", "--rounds", "1", "--llm", "smollm2?max_new_tokens=16&cache_mb=64"])
    assert out["episodes"] == 1 and out["failed"] == 0
    assert out["weights"] >= 135e6 * 2                 # the model is held (2+ bytes a parameter)
    assert 0 < out["seat_caches"] <= 64 * 2**20 and out["batch_kv"] > 0
    # the model is held while it plays: RSS then is at least its weights (not the baseline: in a
    # long test session, memory earlier tests left may be freed during the run)
    assert out["peak_rss"] >= out["playing_peak_rss"] >= out["weights"] and out["baseline_rss"] > 0
    # the kernel-cache bounds it ran under (set by socialgym_agents.llm.loading on a CPU without AMX)
    assert out["kernel_caches"] == {name: os.environ.get(name, "library default")
                                    for name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}


def test_adapter_memory_counts_the_shared_weights_once(smollm2_available, capsys):
    """The shipped adapter beside its base: the two hold the base's weights once and only the
    LoRA's target layers twice (far less than a second model)."""
    from socialgym_benchmarks.perf import adapter_memory
    out = adapter_memory.main([])
    assert 0 < out["both_weights_mb"] - out["base_weights_mb"] < 0.5 * out["base_weights_mb"]
    assert "base + adapted policy" in capsys.readouterr().out


def test_llm_memory_demo_runs_the_makefiles_tournament_line_in_process(monkeypatch):
    """--demo runs the line demo_cost reads from `make -n demo` (here a tiny stand-in) through the
    tournament's own CLI app in this process, and counts the episodes it logged."""
    lines = []

    def tiny_demo(out, python=sys.executable):
        lines.append(out)
        return [f"python3 -m socialgym_env.cli tournament --games kuhn_poker --agents scripted:random,scripted:heuristic "
                f"--episodes 2 --bootstrap 10 --out {out}"]
    monkeypatch.setattr(demo_cost, "demo_commands", tiny_demo)
    out = llm_memory.main(["--demo"])
    assert len(lines) == 1 and out["episodes"] == 2 and out["failed"] == 0      # one pairing, 2 episodes
    assert out["what"] == "the main job as make demo runs it"


def test_demo_attention_counts_the_padded_keys_of_a_planted_mask():
    """Row 0 lets every query see 6 of 8 keys (2 are left padding), row 1 all 8: 48 pairs
    computed, 42 unpadded, whether the mask is boolean or additive; no mask: all unpadded."""
    import torch

    from socialgym_benchmarks.perf.demo_attention import attended_pairs
    query, key = torch.zeros(2, 9, 3, 64), torch.zeros(2, 3, 8, 64)
    allowed = torch.ones(2, 1, 3, 8, dtype=torch.bool)
    allowed[0, :, :, :2] = False
    additive = torch.zeros(2, 1, 3, 8).masked_fill(~allowed, torch.finfo(torch.float32).min)
    assert attended_pairs(query, key, allowed) == attended_pairs(query, key, additive) == (48, 42)
    assert attended_pairs(query, key, None) == (48, 48)


def test_demo_attention_times_the_models_attention_calls(smollm2_available, capsys):
    """On a model loaded before it runs (the session's shared SmolLM2) too; the original
    attention is back afterwards."""
    from transformers import AttentionInterface

    from socialgym_agents.llm import loading
    from socialgym_agents.llm.hf_backend import HFBackend
    from socialgym_benchmarks.perf import demo_attention
    loading.load_model("smollm2")          # loaded before the run: its attention is looked up per call
    before = AttentionInterface()[loading.SHARED_KV_ATTENTION]
    decode_loop = HFBackend._decode_loop
    out = demo_attention.main(["--games", "kuhn_poker", "--agents", "smollm2?max_new_tokens=16,scripted:random"])
    assert out["episodes"] == 2 and out["failed"] == 0
    prefill = out["attention"]["prefill"]
    assert prefill["calls"] > 0 and 0 < prefill["seconds"] < out["wall_s"]
    assert 0 < prefill["unpadded"] <= prefill["computed"]
    assert out["models"] and out["models"][0]["encoded_tokens"] > 0
    assert AttentionInterface()[loading.SHARED_KV_ATTENTION] is before is loading.sdpa_shared_kv
    stages = out["stages"]
    assert stages["prefill passes"]["calls"] > 0 and stages["decode loops"]["calls"] > 0
    assert stages["scoring calls"]["calls"] == 0                 # the roster decodes, it does not score
    assert 0 < stages["prefill passes"]["seconds"] + stages["decode loops"]["seconds"] < out["wall_s"]
    assert prefill["seconds"] < stages["prefill passes"]["seconds"]          # attention is part of its stage
    assert HFBackend._decode_loop is decode_loop    # the methods are back
    assert "of the keys attended unpadded" in capsys.readouterr().out
