"""Prefill rate of the embedded SmolLM2 by batch shape and dtype: tokens/s of one forward pass
over fresh prompts (no cache), the work that bounds the batched runner in short games.

    python socialgym_benchmarks/perf/prefill_rate.py                     # 1x400, 8x256, 16x256; float32, bfloat16
    python socialgym_benchmarks/perf/prefill_rate.py --shapes 1x32 --reps 1   # smoke

Every repetition runs every (dtype, shape) once, in the same order (interleaved), after one
warm-up pass each; the table gives the median and range of tokens/s over repetitions.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_agents.llm.loading import configure_threads, load_model  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="1x400,8x256,16x256", help="batch x tokens, comma-separated")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    args = parser.parse_args(argv)
    import torch
    configure_threads(args.threads)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s]
    models = {d: load_model("smollm2", d)[0] for d in args.dtypes.split(",") if d}
    inputs = {shape: torch.randint(100, 20_000, shape, generator=torch.Generator().manual_seed(0)) for shape in shapes}
    rates: dict = {(d, shape): [] for d in models for shape in shapes}
    with torch.inference_mode():
        for model in models.values():
            for ids in inputs.values():
                model(input_ids=ids, logits_to_keep=1)          # warm-up
        for _ in range(args.reps):
            for (dtype, shape), out in rates.items():
                started = time.perf_counter()
                models[dtype](input_ids=inputs[shape], logits_to_keep=1)
                out.append(shape[0] * shape[1] / (time.perf_counter() - started))
    print(f"prefill tokens/s, {args.reps} interleaved repetitions, median [min-max], {torch.get_num_threads()} threads")
    for (dtype, shape), values in rates.items():
        print(f"{dtype:<9} {shape[0]:>3} x {shape[1]:<5} {statistics.median(values):8.0f} "
              f"[{min(values):.0f}-{max(values):.0f}]")
    return rates


if __name__ == "__main__":
    main()
