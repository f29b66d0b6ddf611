"""Where the main job's time goes: the wall time of the local models' stages (prefill passes,
decode loops, scoring calls), of their attention calls (prefill and decode apart), how much of
the keys they attended over were padding, and the tokens each local model encoded and reused.

    python socialgym_benchmarks/perf/demo_attention.py                        # make demo's tournament line
    python socialgym_benchmarks/perf/demo_attention.py --games resistance     # the main job on one game

The tournament runs in this process (make demo's line as ``make -n demo`` prints it, like
``llm_memory.py --demo``; with ``--games``, those games with ``--agents`` and ``--preset demo``).
Every call of the models' attention (:func:`socialgym_agents.llm.loading.sdpa_shared_kv`, on a
model that uses SDPA) is timed; "keys attended" counts the query x key pairs a call computes,
"unpadded" those its mask lets through (a row's own cache and new tokens: the rest is the left
padding that puts rows of different lengths in one batch). The stages are
:class:`~socialgym_agents.llm.hf_backend.HFBackend`'s methods: a decode batch's prefill
(``_prefill_batch``), its decode loop (``_decode_loop``) and a scoring call (``score``, its own
prefill passes included); the attention calls are part of them. The games, the prompts and the
runner make up the rest of the wall time. The timer adds a clock read per call (30 a forward pass
of SmolLM2).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_benchmarks.perf.llm_memory import DEMO_AGENTS, play_main_job  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="", help="these games instead of make demo's line (comma-separated)")
    parser.add_argument("--agents", default=DEMO_AGENTS, help="--games: the roster (make demo's main one)")
    return parser.parse_args(argv)


def attended_pairs(query, key, attention_mask) -> tuple:
    """(query x key pairs one attention call computes, those its mask lets through)."""
    batch, _, queries, _ = query.shape
    computed = batch * queries * key.shape[2]
    if attention_mask is None:
        return computed, computed
    import torch
    mask = attention_mask[:, 0, :, :key.shape[2]]
    allowed = mask > torch.finfo(mask.dtype).min if mask.dtype.is_floating_point else mask     # additive or boolean
    return computed, int(allowed.expand(batch, queries, -1).sum())


class AttentionClock:
    """Wraps an attention function (:func:`run` puts the wrapper where models find
    ``loading.sdpa_shared_kv``) and sums wall seconds and attended pairs per kind of call."""

    def __init__(self):
        self.totals = defaultdict(lambda: {"calls": 0, "seconds": 0.0, "computed": 0, "unpadded": 0})
        self._masks: tuple = (None, None)      # the last mask's counts: one forward's 30 layers share it

    def wrap(self, attention):
        def timed(module, query, key, value, attention_mask, *args, **kwargs):
            started = time.perf_counter()
            out = attention(module, query, key, value, attention_mask, *args, **kwargs)
            seconds = time.perf_counter() - started
            if self._masks[0] is not attention_mask or attention_mask is None:
                self._masks = (attention_mask, attended_pairs(query, key, attention_mask))
            entry = self.totals["decode" if query.shape[2] == 1 else "prefill"]
            entry["calls"] += 1
            entry["seconds"] += seconds
            entry["computed"] += self._masks[1][0]
            entry["unpadded"] += self._masks[1][1]
            return out
        return timed


STAGES = {"prefill passes": "_prefill_batch", "decode loops": "_decode_loop", "scoring calls": "score"}


def _timed_stage(totals: dict, name: str, method):
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            totals[name]["calls"] += 1
            totals[name]["seconds"] += time.perf_counter() - started
    return timed


def run(args) -> dict:
    from socialgym_agents.llm import hf_backend, loading
    clock = AttentionClock()
    backends = []
    original_attention, original_init = loading.sdpa_shared_kv, hf_backend.HFBackend.__init__

    def init(self, *a, **kw):
        original_init(self, *a, **kw)
        backends.append(self)
    from transformers import AttentionInterface
    timed = clock.wrap(original_attention)
    # a model loaded from now on registers the wrapped name; one already loaded looks it up per call
    loading.sdpa_shared_kv = timed
    AttentionInterface.register(loading.SHARED_KV_ATTENTION, timed)
    hf_backend.HFBackend.__init__ = init
    stages = {name: {"calls": 0, "seconds": 0.0} for name in STAGES}
    originals = {name: getattr(hf_backend.HFBackend, method) for name, method in STAGES.items()}
    for name, method in STAGES.items():
        setattr(hf_backend.HFBackend, method, _timed_stage(stages, name, originals[name]))
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with tempfile.TemporaryDirectory() as out:
            played, failed = play_main_job(out, args.games, args.agents)
    finally:
        loading.sdpa_shared_kv, hf_backend.HFBackend.__init__ = original_attention, original_init
        AttentionInterface.register(loading.SHARED_KV_ATTENTION, original_attention)
        for name, method in STAGES.items():
            setattr(hf_backend.HFBackend, method, originals[name])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    result = {"wall_s": wall, "cpu_s": cpu, "episodes": played, "failed": failed, "stages": stages,
              "attention": {kind: dict(v) for kind, v in clock.totals.items()},
              "models": [{"spec": b.config.mode + (f" adapter={b.config.adapter}" if b.config.adapter else ""),
                          **{k: b.stats[k] for k in ("encoded_tokens", "reused_tokens", "generated_tokens")}}
                         for b in backends]}
    print(f"{played} episodes ({failed} failed), wall {wall:.0f} s, CPU {cpu:.0f} s")
    for name, v in stages.items():
        print(f"  {name:14s}: {v['seconds']:6.1f} s ({100 * v['seconds'] / wall:4.1f}% of the wall time), {v['calls']} calls")
    for kind, v in sorted(result["attention"].items()):
        print(f"  attention, {kind:7s}: {v['seconds']:6.1f} s ({100 * v['seconds'] / wall:4.1f}% of the wall time), "
              f"{v['calls']} calls, {100 * v['unpadded'] / max(1, v['computed']):.0f}% of the keys attended unpadded")
    for model in result["models"]:
        print(f"  model ({model['spec']}): {model['encoded_tokens']} tokens encoded, {model['reused_tokens']} "
              f"reused from caches, {model['generated_tokens']} generated")
    return result


def main(argv=None) -> dict:
    return run(parse_args(argv))


if __name__ == "__main__":
    main()
