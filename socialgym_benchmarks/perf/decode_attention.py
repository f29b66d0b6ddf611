"""A decode step's attention on this CPU: PyTorch's SDPA in bfloat16 (what the runner used before)
against the runner's float32 grouped path (socialgym_agents.llm.loading.grouped_decode_attention),
at SmolLM2's head layout (9 query heads on 3 key/value heads of 64) and the runner's decode shapes
(rows x cached tokens), with left padding in the mask as the runner has it.

    python socialgym_benchmarks/perf/decode_attention.py                       # default shapes
    python socialgym_benchmarks/perf/decode_attention.py --shapes 2x64 --reps 2 --seconds 0.05   # smoke

Every repetition times every (shape, way) once, in the same order (interleaved); the table gives
the median and range over repetitions of milliseconds per call (one layer), their ratio, and each
way's largest difference from float32 SDPA on the same inputs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_agents.llm.loading import configure_threads, grouped_decode_attention  # noqa: E402

HEADS, KV_HEADS, HEAD_DIM = 9, 3, 64


def inputs(rows: int, length: int):
    """bfloat16 query / keys / values of one layer and a boolean mask whose rows are left-padded
    by up to half the length."""
    import torch
    generator = torch.Generator().manual_seed(rows * 10_007 + length)
    query = torch.randn(rows, HEADS, 1, HEAD_DIM, generator=generator).to(torch.bfloat16)
    key, value = (torch.randn(rows, KV_HEADS, length, HEAD_DIM, generator=generator).to(torch.bfloat16)
                  for _ in range(2))
    mask = torch.ones(rows, 1, 1, length, dtype=torch.bool)
    for row in range(rows):
        mask[row, ..., : (row * length) // (2 * rows)] = False
    return query, key, value, mask


def ways():
    import torch.nn.functional as F
    return {"sdpa-bf16": lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                           enable_gqa=True).transpose(1, 2),
            "grouped-f32": lambda q, k, v, m: grouped_decode_attention(q, k, v, m)[0]}


def per_call_ms(fn, args, seconds: float) -> float:
    fn(*args)
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn(*args)
        calls += 1
    return (time.perf_counter() - started) / calls * 1000


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="2x1500,16x1200,32x600,64x300", help="rows x cached tokens")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="timing window per measurement")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    args = parser.parse_args(argv)
    import torch
    import torch.nn.functional as F
    configure_threads(args.threads)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s]
    data = {shape: inputs(*shape) for shape in shapes}
    fns = ways()
    times: dict = {(shape, way): [] for shape in shapes for way in fns}
    with torch.inference_mode():
        errors = {}
        for shape, (q, k, v, m) in data.items():
            exact = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=m,
                                                   enable_gqa=True).transpose(1, 2)
            for way, fn in fns.items():
                errors[shape, way] = float((fn(q, k, v, m).float() - exact).abs().max())
        for _ in range(args.reps):
            for shape in shapes:
                for way, fn in fns.items():
                    times[shape, way].append(per_call_ms(fn, data[shape], args.seconds))
    print(f"ms per call (one layer), median [min-max] of {args.reps} interleaved repetitions; "
          f"max |difference| from float32 SDPA")
    print(f"{'rows x cached':>14} {'sdpa-bf16':>22} {'grouped-f32':>22} {'sdpa / grouped':>22} {'err sdpa':>9} {'err grouped':>11}")
    result = {}
    for shape in shapes:
        a, b = times[shape, "sdpa-bf16"], times[shape, "grouped-f32"]
        ratios = [x / y for x, y in zip(a, b)]
        result[shape] = {"sdpa_ms": a, "grouped_ms": b, "ratios": ratios,
                         "errors": {way: errors[shape, way] for way in fns}}
        cell = lambda xs, unit="": f"{statistics.median(xs):.2f}{unit} [{min(xs):.2f}-{max(xs):.2f}]"  # noqa: E731
        print(f"{'x'.join(map(str, shape)):>14} {cell(a):>22} {cell(b):>22} {cell(ratios, 'x'):>22} "
              f"{errors[shape, 'sdpa-bf16']:>9.4f} {errors[shape, 'grouped-f32']:>11.4f}")
    return result


if __name__ == "__main__":
    main()
