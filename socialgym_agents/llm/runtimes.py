"""CPU inference runtimes for the embedded SmolLM2 beside PyTorch: ONNX Runtime, OpenVINO and
CTranslate2, each from an int8 export of the same dequantized model that :mod:`.loading` caches.

An export is built once (``make setup`` builds them; a run that finds one missing builds it and
says so in one line) under ``$SOCIALGYM_CACHE/runtimes/<name>``, staged and renamed so a killed
build never leaves half an export. Nothing is downloaded: every export is made from the local
model files.

- ``onnxruntime`` and ``openvino`` run one ONNX graph (onnxruntime-genai's model builder: int8
  weights in ``MatMulNBits``, grouped-query attention, explicit key/value inputs and outputs).
  The graph stops at the final norm (``exclude_lm_head``): the output layer is applied here to
  the rows whose logits are needed (the last prompt token, the scored tokens), as PyTorch's
  ``logits_to_keep`` does; the tied embedding is that layer's weight.
- ``ctranslate2`` (``TransformersConverter``, int8): ``score_batch`` scores whole sequences;
  its Python API (4.x) has no logits hook, so it offers the scoring mode only.

:class:`Forward` is what the rest needs of a runtime: ``start(ids)`` encodes a prompt and returns
its state and the last position's log-probabilities, ``feed(state, ids)`` extends a state by
tokens, ``extend_rows(state, rows)`` scores equal-length token rows on copies of one state.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .loading import SMOLLM2_CACHE_NAME, cache_root, cpu_flags

ONNX_RUNTIMES = ("onnxruntime", "openvino")
RUNTIMES = ONNX_RUNTIMES + ("ctranslate2",)
# Positions of copied key/value caches one scoring pass may hold (46 kB each in float32: ~750 MB).
SCORE_CACHE_TOKENS = 16384
EXPORT_OF = {"onnxruntime": "onnx-int8", "openvino": "onnx-int8", "ctranslate2": "ct2-int8"}


class RuntimeUnavailable(RuntimeError):
    """The runtime's package is not installed, or its export could not be built."""


def export_dir(runtime: str) -> Path:
    return cache_root() / "runtimes" / EXPORT_OF[runtime]


def _dense_model_dir() -> Path:
    """The float32 model folder :mod:`.loading` caches from the GGUF (made here if missing)."""
    target = cache_root() / "models" / SMOLLM2_CACHE_NAME
    if not (target / "config.json").exists():
        from .loading import load_model_copy
        load_model_copy("smollm2")          # writes the folder as a side effect of loading
    return target


def _build_onnx(source: Path, staging: Path) -> None:
    """onnxruntime-genai's model builder (its command line: its Python entry wants its own
    option parsing first), int8 weights, the graph cut before the output layer; the output
    layer's weight (the tied embedding) saved beside it."""
    import subprocess

    import numpy as np
    from safetensors.numpy import load_file
    with tempfile.TemporaryDirectory() as scratch:
        built = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(source),
                                "-o", str(staging), "-p", "int8", "-e", "cpu", "-c", scratch,
                                "--extra_options", "exclude_lm_head=true"], capture_output=True, text=True)
    if built.returncode != 0:
        tail = (built.stderr or built.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeUnavailable(f"the onnx export failed (needs onnxruntime-genai, onnx, onnx-ir): {tail[0]}")
    weight = load_file(str(source / "model.safetensors"))["model.embed_tokens.weight"]
    np.save(staging / "lm_head.npy", np.ascontiguousarray(weight, dtype=np.float32))


def _build_ct2(source: Path, staging: Path) -> None:
    try:
        from ctranslate2.converters import TransformersConverter
    except ImportError as err:
        raise RuntimeUnavailable(f"the ctranslate2 export needs ctranslate2 ({err})") from None
    TransformersConverter(str(source)).convert(str(staging), quantization="int8", force=True)


BUILDERS = {"onnx-int8": _build_onnx, "ct2-int8": _build_ct2}


def ensure_export(runtime: str, quiet: bool = False) -> Path:
    """The runtime's export folder, built (once, atomically) if it is missing."""
    target = export_dir(runtime)
    if (target / "DONE").exists():
        return target
    started = time.perf_counter()
    if not quiet:
        print(f"{runtime}: no export at {target}; building it from the local SmolLM2 (once)", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        BUILDERS[EXPORT_OF[runtime]](_dense_model_dir(), staging)
        (staging / "DONE").write_text(f"{time.perf_counter() - started:.1f} s\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def has_native_bf16(flags: str = "") -> bool:
    flags = flags or cpu_flags()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _log_softmax(logits):
    import numpy as np
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


class Forward:
    """One ONNX graph (see the module docstring) run by onnxruntime or OpenVINO. ``precision``:
    OpenVINO's activation precision (``f32``; ``bf16`` only where the CPU computes it natively)."""

    def __init__(self, runtime: str, threads: int = 0, precision: str = "f32"):
        import numpy as np
        folder = ensure_export(runtime)
        self.runtime, self.layers = runtime, 30
        threads = threads or len(os.sched_getaffinity(0))
        self._run = (_ort_session if runtime == "onnxruntime" else _ov_session)(folder / "model.onnx", threads,
                                                                                  precision)
        self.head = np.load(folder / "lm_head.npy")

    def _forward(self, ids, past: list, past_length: int):
        import numpy as np
        ids = np.asarray(ids, dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones((ids.shape[0], past_length + ids.shape[1]), np.int64)}
        for layer, (key, value) in enumerate(past):
            feeds[f"past_key_values.{layer}.key"], feeds[f"past_key_values.{layer}.value"] = key, value
        hidden, present = self._run(feeds, self.layers)
        return hidden, present

    def _empty_past(self, rows: int) -> list:
        import numpy as np
        empty = np.zeros((rows, 3, 0, 64), np.float32)
        return [(empty, empty)] * self.layers

    def logprobs(self, hidden):
        """Log-probabilities of the next token from final-norm hidden states ``(..., 576)``."""
        return _log_softmax(hidden @ self.head.T)

    def empty_state(self):
        """The state before any token."""
        return self._empty_past(1), 0

    def start(self, ids: list):
        return self.feed(self.empty_state(), ids)

    def feed(self, state, ids: list):
        hidden, present = self._forward([list(ids)], state[0], state[1])
        return (present, state[1] + len(ids)), self.logprobs(hidden[0, -1])

    def extend_rows(self, state, rows: list):
        """Per row (all of one length), the log-probabilities after each of its tokens, each row on
        its own copy of ``state``. The graph's attention (GroupQueryAttention) takes several rows
        on a cache only one token at a time, so the rows advance together token by token."""
        import numpy as np
        if self.runtime == "openvino":
            # OpenVINO's reading of that attention fails on any batch of copied caches (a reshape
            # in it), so there each row is its own pass.
            return np.concatenate([self.logprobs(self._forward([row], state[0], state[1])[0]) for row in rows])
        past = [(np.repeat(k, len(rows), 0), np.repeat(v, len(rows), 0)) for k, v in state[0]]
        length, steps = state[1], []
        for column in np.asarray(rows, dtype=np.int64).T:
            hidden, past = self._forward(column[:, None], past, length)
            steps.append(hidden[:, 0])
            length += 1
        return self.logprobs(np.stack(steps, axis=1))

    def score(self, state, first, options: list) -> list:
        """The log-probability of each option's tokens after ``state`` (a prompt's, whose
        next-token log-probabilities are ``first``): its first token from ``first``, the rest as
        rows on copies of the state, rows of one length together (no padding in the attention)."""
        values = [float(first[o[0]]) if o else 0.0 for o in options]
        by_length: dict = {}
        for k, option in enumerate(options):
            if len(option) > 1:
                by_length.setdefault(len(option), []).append(k)
        # rows of a pass each copy the state's cache: at most SCORE_CACHE_TOKENS positions in all
        most = max(1, SCORE_CACHE_TOKENS // (state[1] + 1))
        for group in by_length.values():
            for start in range(0, len(group), most):
                chunk = group[start:start + most]
                logprobs = self.extend_rows(state, [options[k][:-1] for k in chunk])
                for row, k in enumerate(chunk):
                    values[k] += float(sum(logprobs[row, j, t] for j, t in enumerate(options[k][1:])))
        return values


def _ort_session(model: Path, threads: int, precision: str):
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise RuntimeUnavailable(f"runtime=onnxruntime needs onnxruntime ({err})") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def run(feeds: dict, layers: int):
        out = dict(zip(names, session.run(None, feeds)))
        return out["hidden_states"], [(out[f"present.{i}.key"], out[f"present.{i}.value"]) for i in range(layers)]
    return run


def _ov_session(model: Path, threads: int, precision: str):
    try:
        import openvino as ov
    except ImportError as err:
        raise RuntimeUnavailable(f"runtime=openvino needs openvino ({err})") from None
    config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY"}
    compiled = ov.Core().compile_model(str(model), "CPU", config)
    request = compiled.create_infer_request()
    names = [o.get_any_name() for o in compiled.outputs]

    def run(feeds: dict, layers: int):
        result = request.infer(feeds)
        out = {name: result[i] for i, name in enumerate(names)}
        return out["hidden_states"], [(out[f"present.{i}.key"], out[f"present.{i}.value"]) for i in range(layers)]
    return run


class CT2Scorer:
    """CTranslate2's ``score_batch`` over whole sequences (prompt and option): the scoring mode."""

    def __init__(self, tokenizer, threads: int = 0, compute_type: str = "int8"):
        try:
            import ctranslate2
        except ImportError as err:
            raise RuntimeUnavailable(f"runtime=ctranslate2 needs ctranslate2 ({err})") from None
        threads = threads or len(os.sched_getaffinity(0))
        self.generator = ctranslate2.Generator(str(ensure_export("ctranslate2")), device="cpu",
                                               compute_type=compute_type, intra_threads=threads, inter_threads=1)
        self.tokenizer = tokenizer

    def score(self, prompt: list, options: list) -> list:
        """The log-probability of each option's tokens after ``prompt``."""
        tokens = [self.tokenizer.convert_ids_to_tokens(list(prompt) + list(o)) for o in options]
        results = self.generator.score_batch(tokens)
        return [float(sum(r.log_probs[len(r.log_probs) - len(o):])) for r, o in zip(results, options)]


def main(argv=None) -> None:
    """Build every runtime's export that is missing (``make runtimes``), saying how long each took."""
    names = (argv if argv is not None else sys.argv[1:]) or list(RUNTIMES)
    for name in names:
        if name not in RUNTIMES:
            raise SystemExit(f"unknown runtime {name!r}; choose from {', '.join(RUNTIMES)}")
        folder = ensure_export(name)
        print(f"{name}: {folder} (built in {(folder / 'DONE').read_text().strip()})")


if __name__ == "__main__":
    main()
