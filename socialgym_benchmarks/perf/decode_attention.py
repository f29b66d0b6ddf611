"""The runner's attention on this CPU, one layer at SmolLM2's head layout (9 query heads on 3
key/value heads of 64), with left padding in the mask as the runner has it.

- A decode step (``--new 1``, the default): PyTorch's SDPA in bfloat16 (what the runner used
  before) against the runner's float32 grouped path
  (socialgym_agents.llm.loading.grouped_decode_attention), at the runner's decode shapes (rows x
  cached tokens).
- A prefill pass (``--new N``: N new tokens a row, causal among themselves, on top of the cached
  ones): SDPA in bfloat16 (what the runner uses) against the same attention as two bfloat16
  matmuls with the query heads grouped by their key/value head and a float32 softmax between
  them (``grouped-bf16``: oneDNN's bfloat16 matmuls, with each call's whole score matrix written
  out).

    python socialgym_benchmarks/perf/decode_attention.py                       # decode steps
    python socialgym_benchmarks/perf/decode_attention.py --new 240 --shapes 8x1000,16x300   # prefill passes
    python socialgym_benchmarks/perf/decode_attention.py --shapes 2x64 --reps 2 --seconds 0.05   # smoke

Every repetition times every (shape, way) once, in the same order (interleaved); the table gives
the median and range over repetitions of milliseconds per call (one layer), their ratio, each
way's GFLOP/s (the two matmuls' multiply-adds over every query x key pair, padding included), and
each way's largest difference from float32 SDPA on the same inputs.
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


def inputs(rows: int, length: int, new: int = 1):
    """bfloat16 query (``new`` tokens a row) / keys / values of one layer and a boolean mask whose
    rows are left-padded by up to half the cached ``length``. A decode step's ``length`` keys
    include its own token's; a prefill pass has ``length`` cached keys and its new tokens', causal
    among themselves."""
    import torch
    generator = torch.Generator().manual_seed(rows * 10_007 + length + 7 * (new - 1))
    keys = length if new == 1 else length + new
    query = torch.randn(rows, HEADS, new, HEAD_DIM, generator=generator).to(torch.bfloat16)
    key, value = (torch.randn(rows, KV_HEADS, keys, HEAD_DIM, generator=generator).to(torch.bfloat16)
                  for _ in range(2))
    mask = torch.ones(rows, 1, new, keys, dtype=torch.bool)
    mask[..., keys - new:] = torch.ones(new, new, dtype=torch.bool).tril()
    for row in range(rows):
        mask[row, ..., : (row * length) // (2 * rows)] = False
    return query, key, value, mask


def grouped_bf16(query, key, value, mask):
    """Attention as two bfloat16 matmuls, the query heads grouped by the key/value head they
    share, the scores' softmax in float32 (the whole score matrix written out)."""
    import torch
    rows, heads, new, dim = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    group = heads // kv_heads
    scores = torch.matmul(query.reshape(rows, kv_heads, group * new, dim), key.transpose(-1, -2)).float()
    scores = scores.mul_(dim ** -0.5).view(rows, kv_heads, group, new, length)
    scores.masked_fill_(~mask.unsqueeze(2), torch.finfo(torch.float32).min)
    weights = scores.softmax(-1).to(value.dtype).view(rows, kv_heads, group * new, length)
    return torch.matmul(weights, value).view(rows, heads, new, dim).transpose(1, 2)


def ways(new: int = 1):
    import torch.nn.functional as F
    sdpa = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True).transpose(1, 2)  # noqa: E731
    if new > 1:
        return {"sdpa-bf16": sdpa, "grouped-bf16": grouped_bf16}
    return {"sdpa-bf16": sdpa, "grouped-f32": lambda q, k, v, m: grouped_decode_attention(q, k, v, m)[0]}


def gflops(shape: tuple, new: int, ms: float) -> float:
    """The two matmuls' GFLOP/s at ``ms`` a call: 2 x 2 x head size per query x key pair."""
    rows, length = shape
    keys = length if new == 1 else length + new
    return 4 * rows * HEADS * new * keys * HEAD_DIM / (ms / 1000) / 1e9


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
    parser.add_argument("--new", type=int, default=1, help="new tokens a row (1: a decode step; more: a prefill pass)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="timing window per measurement")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    args = parser.parse_args(argv)
    import torch
    import torch.nn.functional as F
    configure_threads(args.threads)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s]
    data = {shape: inputs(*shape, args.new) for shape in shapes}
    fns = ways(args.new)
    first, second = fns
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
    print(f"ms per call (one layer, {args.new} new token(s) a row), median [min-max] of {args.reps} "
          f"interleaved repetitions; GFLOP/s at the medians; max |difference| from float32 SDPA")
    print(f"{'rows x cached':>14} {first:>22} {second:>22} {'sdpa / grouped':>22} {'GFLOP/s':>15} "
          f"{'err sdpa':>9} {'err grouped':>11}")
    result = {}
    for shape in shapes:
        a, b = times[shape, first], times[shape, second]
        ratios = [x / y for x, y in zip(a, b)]
        rates = [gflops(shape, args.new, statistics.median(xs)) for xs in (a, b)]
        result[shape] = {"sdpa_ms": a, "grouped_ms": b, "ratios": ratios, "gflops": rates,
                         "errors": {way: errors[shape, way] for way in fns}}
        cell = lambda xs, unit="": f"{statistics.median(xs):.2f}{unit} [{min(xs):.2f}-{max(xs):.2f}]"  # noqa: E731
        print(f"{'x'.join(map(str, shape)):>14} {cell(a):>22} {cell(b):>22} {cell(ratios, 'x'):>22} "
              f"{rates[0]:>7.0f} /{rates[1]:>6.0f} {errors[shape, first]:>9.4f} {errors[shape, second]:>11.4f}")
    return result


if __name__ == "__main__":
    main()
