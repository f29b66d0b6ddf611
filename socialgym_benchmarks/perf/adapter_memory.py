"""What a LoRA policy beside its base model costs in memory: the weights both models hold (each
tensor counted once) and the process's RSS before and after the adapted policy is made.

    python socialgym_benchmarks/perf/adapter_memory.py [--adapter DIR] [--options dtype=auto]

``make demo`` plays the shipped self-play adapter beside SmolLM2 in one process; the adapted copy
shares the weights its merge left unchanged with the base (``socialgym_agents.llm.adapters``), so
the first figure is what the second model adds to the weights. RSS also holds what the
allocator keeps after the float32 merge buffer is freed, so it moves less than the weights do.
"""
from __future__ import annotations

import argparse

DEFAULT_ADAPTER = "socialgym_agents/adapters/smollm2_selfplay_liars_dice"


def main(argv=None) -> dict:
    import psutil
    from socialgym_agents import make_policy
    from socialgym_agents.llm.packed import weight_bytes
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default=DEFAULT_ADAPTER)
    parser.add_argument("--options", default="dtype=auto", help="the LLM options of both policies")
    args = parser.parse_args(argv)
    process = psutil.Process()
    base = make_policy(f"smollm2?{args.options}").backend.model
    before = process.memory_info().rss
    tuned = make_policy(f"smollm2?adapter={args.adapter}&{args.options}").backend.model
    after = process.memory_info().rss
    out = {"base_weights_mb": weight_bytes(base) / 2 ** 20,
           "both_weights_mb": weight_bytes(base, tuned) / 2 ** 20,
           "rss_base_mb": before / 2 ** 20, "rss_both_mb": after / 2 ** 20}
    print(f"weights: base {out['base_weights_mb']:.0f} MB, base + adapted policy {out['both_weights_mb']:.0f} MB "
          f"(each tensor once); RSS {out['rss_base_mb']:.0f} MB -> {out['rss_both_mb']:.0f} MB")
    return out


if __name__ == "__main__":
    main()
