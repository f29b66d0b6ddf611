"""The CPU runtimes beside PyTorch (socialgym_agents/llm/runtimes.py): exports built once and
atomically, the ONNX graph's log-probabilities against PyTorch's float32 on fixed prompts, and the
benchmark's constrained decoding (socialgym_benchmarks/perf/cpu_runtimes.py) always legal."""
import itertools

import numpy as np
import pytest

from helpers import require_runtimes
from socialgym_agents.llm import runtimes

# int8 weights (blocks of 32) and int8 activations move a reply's log-probability: by up to 0.2
# nat through onnxruntime and 1.9 nats through OpenVINO (its own activation quantisation) on these
# prompts. The tolerances catch a wrong graph (a shifted position, a missing norm, another model:
# tens of nats) without failing on quantisation; the top reply must be the same.
TOLERANCE_NATS = {"onnxruntime": 1.0, "openvino": 2.5}
CLOSE_CALL_NATS = 0.5     # rock/paper/scissors here: paper over rock by 0.1 nat in float32, rock through OpenVINO
PROMPTS = [("You are playing the prisoner's dilemma. Reply with one word: cooperate or defect.\nAnswer:",
            [" cooperate", " defect"]),
           ("Rock, paper or scissors? Your move:", [" rock", " paper", " scissors"]),
           ("Liar's dice. The last bid was two fives. Do you bid three fives or call liar? I", [" bid", " call"])]


@pytest.fixture
def fake_builds(tmp_path, monkeypatch):
    """A cache under tmp_path whose ct2 export is a fake builder counting its calls."""
    monkeypatch.setenv("SOCIALGYM_CACHE", str(tmp_path))
    monkeypatch.setattr(runtimes, "_dense_model_dir", lambda: tmp_path / "dense")
    calls = []

    def build(source, staging):
        calls.append(source)
        (staging / "model.bin").write_text("weights")
    monkeypatch.setitem(runtimes.BUILDERS, "ct2-int8", build)
    return calls


def test_an_export_is_built_once_and_says_so_once(fake_builds, capsys):
    first = runtimes.ensure_export("ctranslate2")
    second = runtimes.ensure_export("ctranslate2")
    assert first == second == runtimes.export_dir("ctranslate2")
    assert (first / "model.bin").read_text() == "weights" and (first / "DONE").exists()
    assert len(fake_builds) == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "no export" in said[0] and "building it" in said[0]
    assert [p.name for p in first.parent.iterdir()] == [first.name]       # no staging folder left


def test_a_failed_export_leaves_no_half_export(fake_builds, monkeypatch):
    def broken(source, staging):
        (staging / "model.bin").write_text("half")
        raise RuntimeError("killed halfway")
    monkeypatch.setitem(runtimes.BUILDERS, "ct2-int8", broken)
    with pytest.raises(RuntimeError, match="killed halfway"):
        runtimes.ensure_export("ctranslate2")
    target = runtimes.export_dir("ctranslate2")
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_the_export_command_refuses_an_unknown_runtime_in_one_line():
    with pytest.raises(SystemExit, match="unknown runtime 'tensorrt'; choose from onnxruntime"):
        runtimes.main(["tensorrt"])


class _ScriptedRuntime:
    """start/feed as a runtime has them, with log-probabilities that favour ``liked`` tokens."""

    def __init__(self, liked: set, size: int = 64):
        self.liked, self.size, self.passes = liked, size, 0

    def _logprobs(self):
        values = np.full(self.size, -5.0)
        values[list(self.liked)] = -0.1
        return values

    def start(self, ids):
        self.passes += 1
        return list(ids), self._logprobs()

    def feed(self, state, ids):
        self.passes += 1
        return state + list(ids), self._logprobs()


def test_constrained_choice_spells_a_legal_reply_and_follows_the_logits():
    from socialgym_benchmarks.perf.cpu_runtimes import constrained_choice
    options = [[5, 6, 7], [5, 6, 8], [5, 9], [10]]
    eos = 63
    assert constrained_choice(_ScriptedRuntime({5, 6, 8}), [1, 2], options, eos) == 1
    assert constrained_choice(_ScriptedRuntime({5, 9}), [1, 2], options, eos) == 2
    assert constrained_choice(_ScriptedRuntime({5, 6, 7}), [1, 2], options, eos) == 0
    assert constrained_choice(_ScriptedRuntime({10}), [1, 2], options, eos) == 3
    for liked in itertools.combinations(range(5, 12), 2):        # whatever the logits, a legal reply
        assert constrained_choice(_ScriptedRuntime(set(liked)), [1], options, eos) in range(len(options))
    forced = _ScriptedRuntime({7})
    assert constrained_choice(forced, [1], [[5, 6, 7]], eos) == 0 and forced.passes == 1   # no pass for forced tokens


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_the_onnx_graph_agrees_with_pytorch_float32_on_fixed_prompts(smollm2_available, runtime):
    require_runtimes("onnxruntime_genai", runtime)
    from socialgym_benchmarks.perf.cpu_runtimes import OnnxRuntime, TorchRuntime
    reference = TorchRuntime("float32")
    tokenizer = reference.tokenizer
    ours = OnnxRuntime(runtime)
    for prompt, replies in PROMPTS:
        ids = tokenizer(prompt)["input_ids"]
        options = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in replies]
        options.append(tokenizer(" I will think about it", add_special_tokens=False)["input_ids"])  # a long reply
        expected, got = reference.score(ids, options), ours.score(ids, options)
        best, second = sorted(expected)[-1], sorted(expected)[-2]
        if best - second > CLOSE_CALL_NATS:       # a close call may flip under int8, a clear one not
            assert np.argmax(got) == np.argmax(expected)
        assert np.max(np.abs(np.subtract(got, expected))) < TOLERANCE_NATS[runtime], (prompt, got, expected)
        _, first = ours.start(ids)
        _, first_reference = reference.start(ids)
        assert int(np.argmax(first_reference)) in np.argsort(first)[-5:]      # the next token: float32's among our top 5


def test_cpu_peak_sets_a_runtimes_prefill_against_the_int8_peak(smollm2_available, capsys):
    require_runtimes("onnxruntime_genai", "onnxruntime")
    from socialgym_benchmarks.perf import cpu_peak
    out = cpu_peak.main(["--tokens", "32", "--prefill", "2x16", "--decode", "2", "--context", "16", "--reps", "2",
                         "--dtypes", "int8", "--dtype", "int8", "--runtime", "onnxruntime"])
    assert len(out["runtime_prefill_tokens_s"]) == 2 and min(out["runtime_prefill_tokens_s"]) > 0
    assert out["ratios"]["onnxruntime"] > 0
    assert "onnxruntime's int8 export" in capsys.readouterr().out


def test_a_missing_runtime_fails_the_tests_that_need_it_instead_of_skipping():
    with pytest.raises(pytest.fail.Exception, match="no_such_runtime_module not installed: the `all` extra"):
        require_runtimes("numpy", "no_such_runtime_module")
