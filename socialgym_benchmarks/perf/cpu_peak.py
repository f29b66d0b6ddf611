"""How close the runner's forward passes come to this CPU's matrix-multiply peak.

1. The peak: GFLOP/s of SmolLM2-135M's weight matmuls alone (hidden 576, intermediate 1536,
   9 query heads and 3 key/value heads of 64, vocabulary 49,152), ``tokens x in`` activations
   times ``in x out`` weights, in float32, bfloat16 and int8 (the runner's ``dtype=int8`` layer,
   socialgym_agents.llm.int8: int8 weights per output channel, activations quantised per row,
   oneDNN's int8 GEMM where the CPU has VNNI, FBGEMM's elsewhere; its quantisation passes are
   counted in its time), and ``bfloat16-packed``: bfloat16 from weights packed once for oneDNN, as the runner
   holds them on a CPU without AMX (socialgym_agents.llm.packed; ``bfloat16`` hands oneDNN the
   plain weight at every call). ``int8-dynamic`` (not in the default list): PyTorch's dynamic quantisation of
   ``nn.Linear`` (one activation scale per pass; faster, but the runner does not use it: see
   socialgym_agents.llm.int8). The peak of a dtype is its best shape's median.
2. The runner's rates: prefill tokens/s of the model's forward pass over fresh prompts
   (``--prefill`` batch x tokens) and decode tokens/s of one-token steps of ``--decode`` rows on a
   cache of ``--context`` tokens, in ``--dtype`` (float32, bfloat16, bfloat16-packed or int8: the
   Linear layers in int8, the rest float32); each turned into GFLOP/s of the same matmuls
   (2 x 106 M multiply-adds per token; attention, norms and the output layer, which prefill
   computes for one token per row, are left out, so the ratio understates the work done).
3. Their ratio to the peak of that dtype. With ``--runtime`` (``onnxruntime`` or ``openvino``), the
   same prefill through that runtime's int8 export (socialgym_agents.llm.runtimes; one prompt a
   pass, the graph's attention taking one), set against the int8 peak: the peak of PyTorch's
   int8 GEMM on this CPU, which the runtime's own int8 kernels may beat.

    python socialgym_benchmarks/perf/cpu_peak.py                              # defaults below
    python socialgym_benchmarks/perf/cpu_peak.py --tokens 8 --dtypes bfloat16,bfloat16-packed   # a decode step's rows
    python socialgym_benchmarks/perf/cpu_peak.py --tokens 16 --prefill 2x16 --decode 2 --context 16 --reps 1  # smoke
    python socialgym_benchmarks/perf/cpu_peak.py --dtype int8 --runtime onnxruntime  # a runtime's prefill beside int8
    python socialgym_benchmarks/perf/cpu_peak.py --dtypes float32,int8 --dtype int8 --emulate-avx2  # as an AVX2-only CPU

The host's CPU flags are printed first (and, with ``--emulate-avx2``, what the libraries see under
the CPUID mask of socialgym_benchmarks/perf/isa.py).

Repetitions are interleaved (every measurement once per repetition); medians and ranges.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

HIDDEN, INTERMEDIATE, HEAD_DIM, HEADS, KV_HEADS, VOCAB, LAYERS = 576, 1536, 64, 9, 3, 49152, 30
# (name, in, out) of each weight matmul of one decoder layer
LAYER_SHAPES = [("q/o proj", HIDDEN, HEADS * HEAD_DIM), ("k/v proj", HIDDEN, KV_HEADS * HEAD_DIM),
                ("gate/up proj", HIDDEN, INTERMEDIATE), ("down proj", INTERMEDIATE, HIDDEN)]
SHAPES = LAYER_SHAPES + [("lm head", HIDDEN, VOCAB)]
# multiply-adds per token in the decoder layers' matmuls: q, k, v, o, gate, up, down
LAYER_MACS = HIDDEN * (2 * HEADS * HEAD_DIM + 2 * KV_HEADS * HEAD_DIM) + 3 * HIDDEN * INTERMEDIATE
FLOPS_PER_TOKEN = 2 * LAYERS * LAYER_MACS


RUNNER_DTYPES = ("float32", "bfloat16", "bfloat16-packed", "int8")
PACKED = "bfloat16-packed"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1024, help="activation rows of the peak matmuls")
    parser.add_argument("--dtypes", default="float32,bfloat16,bfloat16-packed,int8")
    parser.add_argument("--dtype", default="bfloat16",
                        help="the runner's dtype (float32, bfloat16, bfloat16-packed or int8)")
    parser.add_argument("--prefill", default="16x200", help="prefill batch x tokens (fresh prompts)")
    parser.add_argument("--decode", type=int, default=32, help="decode rows")
    parser.add_argument("--context", type=int, default=600, help="cached tokens per decode row")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--runtime", default="", choices=("", "onnxruntime", "openvino"),
                        help="also that runtime's prefill (its int8 export, one prompt a pass), against the int8 peak")
    parser.add_argument("--emulate-avx2", action="store_true",
                        help="run as an AVX2-only CPU would (CPUID masked: socialgym_benchmarks/perf/isa.py)")
    args = parser.parse_args(argv)
    if args.dtype not in RUNNER_DTYPES:
        parser.error(f"--dtype must be one of {', '.join(RUNNER_DTYPES)}")
    return args


def _linear(dtype: str, n_in: int, n_out: int):
    import torch
    layer = torch.nn.Linear(n_in, n_out, bias=False)
    if dtype == "int8":
        from socialgym_agents.llm.int8 import Int8Linear
        from socialgym_agents.llm.loading import host_int8_kernel
        return Int8Linear(layer, host_int8_kernel()), torch.float32    # the kernel the runner takes here
    if dtype == PACKED:
        from socialgym_agents.llm.packed import PackedLinear
        return PackedLinear(layer.to(torch.bfloat16)), torch.bfloat16
    if dtype == "int8-dynamic":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # torch.ao's deprecation notice
            return torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(layer), {torch.nn.Linear},
                                                          dtype=torch.qint8), torch.float32
    return layer.to(getattr(torch, dtype)), getattr(torch, dtype)


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _summary(values: list) -> str:
    return f"{statistics.median(values):8.1f} [{min(values):.1f}-{max(values):.1f}]"


def _kernels(dtypes: list, tokens: int, generator) -> dict:
    """(dtype, shape name) -> (layer, activations, FLOPs) of every weight shape in every dtype."""
    import torch
    kernels = {}
    for dtype in dtypes:
        for name, n_in, n_out in SHAPES:
            layer, act_dtype = _linear(dtype, n_in, n_out)
            x = torch.randn(tokens, n_in, generator=generator).to(act_dtype)
            kernels[(dtype, name)] = (layer, x, 2 * tokens * n_in * n_out)
    return kernels


def _print_rate(name: str, shape: str, rates: list, peak, dtype: str):
    """One line of the runner's rates as tokens/s, GFLOP/s and the share of ``dtype``'s peak."""
    achieved = [r * FLOPS_PER_TOKEN / 1e9 for r in rates]
    ratio = f"{statistics.median(achieved) / peak:6.0%} of the {dtype} peak" if peak else ""
    print(f"  {name:<8} {shape:<26} tokens/s {_summary(rates)}  GFLOP/s {_summary(achieved)}  {ratio}")
    return statistics.median(achieved) / peak if peak else None


def _runtime_prefill(runtime: str, prompts: list):
    """A callable that prefills ``prompts`` one by one through ``runtime`` (None without one)."""
    if not runtime:
        return None
    from socialgym_agents.llm.runtimes import Forward
    forward = Forward(runtime)
    forward.start(prompts[0])                                 # warm-up
    return lambda: [forward.start(row) for row in prompts]


def _announce_cpu(emulate_avx2: bool, argv: list) -> None:
    """Re-run as an AVX2-only CPU if asked (isa.py), then print the host's flags and the ISA."""
    from socialgym_benchmarks.perf.cpu_runtimes import host_line
    from socialgym_benchmarks.perf.isa import emulation_line, rerun_as_avx2
    if emulate_avx2:
        rerun_as_avx2(__file__, argv)
    print(host_line())
    print(emulation_line())


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    _announce_cpu(args.emulate_avx2, argv)
    import torch

    from socialgym_agents.llm.kv_cache import RoomyCache
    from socialgym_agents.llm.loading import configure_threads, load_model
    configure_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    dtypes = [d for d in args.dtypes.split(",") if d]
    kernels = _kernels(dtypes, args.tokens, generator)
    model = load_model("smollm2", "bfloat16" if args.dtype == PACKED else args.dtype)[0]
    if args.dtype == PACKED:
        from socialgym_agents.llm.packed import pack_linears
        pack_linears(model)
    batch, length = (int(v) for v in args.prefill.split("x"))
    prompt = torch.randint(100, 20_000, (batch, length), generator=generator)
    past = torch.randint(100, 20_000, (args.decode, args.context), generator=generator)
    step = torch.randint(100, 20_000, (args.decode, 1), generator=generator)

    def decode_step() -> float:
        cache = RoomyCache(room=1)
        model(input_ids=past, cache=cache, use_cache=True, logits_to_keep=1)
        return _timed(lambda: model(input_ids=step, cache=cache, use_cache=True, logits_to_keep=1))

    gflops: dict = {key: [] for key in kernels}
    prefill_rate, decode_rate, runtime_rate = [], [], []
    runtime_prefill = _runtime_prefill(args.runtime, prompt.tolist())
    with torch.inference_mode():
        for layer, x, _ in kernels.values():
            layer(x)                                                  # warm-up
        model(input_ids=prompt, logits_to_keep=1)
        for _ in range(args.reps):
            for key, (layer, x, flops) in kernels.items():
                gflops[key].append(flops / _timed(lambda: layer(x)) / 1e9)
            prefill_rate.append(batch * length / _timed(lambda: model(input_ids=prompt, logits_to_keep=1)))
            decode_rate.append(args.decode / decode_step())
            if runtime_prefill:
                runtime_rate.append(batch * length / _timed(runtime_prefill))
    print(f"{torch.get_num_threads()} threads, {args.reps} interleaved repetitions, median [min-max]")
    print(f"matmul GFLOP/s at {args.tokens} tokens x SmolLM2's weight shapes")
    peaks = {}
    for dtype in dtypes:
        medians = {name: statistics.median(gflops[(dtype, name)]) for name, _, _ in SHAPES}
        peaks[dtype] = max(medians.values())
        for name, n_in, n_out in SHAPES:
            print(f"  {dtype:<12} {name:<13} {n_in:>5} x {n_out:<6} {_summary(gflops[(dtype, name)])}")
    print(f"\nthe runner in {args.dtype} ({FLOPS_PER_TOKEN / 1e9:.3f} GFLOP of decoder matmuls per token)")
    rows = {"prefill": (f"{batch} x {length} fresh", prefill_rate),
            "decode": (f"{args.decode} rows on {args.context} cached", decode_rate)}
    ratios = {name: _print_rate(name, shape, rates, peaks.get(args.dtype), args.dtype)
              for name, (shape, rates) in rows.items()}
    if runtime_rate:
        print(f"\n{args.runtime}'s int8 export (socialgym_agents.llm.runtimes), one prompt a pass")
        ratios[args.runtime] = _print_rate("prefill", rows["prefill"][0], runtime_rate, peaks.get("int8"), "int8")
    return {"peaks": peaks, "prefill_tokens_s": prefill_rate, "decode_tokens_s": decode_rate, "ratios": ratios,
            "runtime_prefill_tokens_s": runtime_rate}


if __name__ == "__main__":
    main()
