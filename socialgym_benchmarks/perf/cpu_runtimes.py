"""The embedded SmolLM2's decisions through PyTorch and the CPU inference runtimes, side by side.

The decisions are recorded once from a seeded run of main-job games (the demo preset's configs,
every seat SmolLM2 in the scoring mode, float32): each is a real prompt (token ids) and the token
ids of its legal replies (the part after their common prefix, which the prompt carries). Then
every runtime takes the same decisions in the two modes the main job uses:

- ``score``: the log-probability of every legal reply after the prompt (the prompt encoded once,
  the replies as rows on copies of its key/value cache; CTranslate2's ``score_batch`` encodes
  each prompt-and-reply sequence whole, its API having no cache to share);
- ``constrained``: greedy decoding restricted to the legal replies' tokens (a token trie ending
  in EOS; a token that is the only legal one is taken without a pass), so every reply is legal.
  CTranslate2's Python API (4.x) has no logits hook, so it has no constrained mode here.

Runtimes: ``torch-float32`` (the reference), ``torch-bfloat16`` (Linear weights packed for
oneDNN where the runner packs them), ``torch-int8`` (socialgym_agents.llm.int8),
``onnxruntime-int8``, ``openvino-int8`` (f32 activations), ``openvino-int8-bf16`` (bf16
activations; only where the CPU computes bf16 natively) and ``ctranslate2-int8``, all from the
same model (socialgym_agents.llm.runtimes builds the exports). Agreement with torch-float32: the
share of decisions whose top reply (score) or chosen reply (constrained) is the same, and the
Pearson correlation of the replies' log-probabilities.

``--emulate-avx2`` re-runs itself as an AVX2-only CPU would run it (socialgym_benchmarks/perf/isa.py:
CPUID masked for every library, ONNX Runtime's MLAS included, and the libraries' ISA caps set),
without the bf16 runtimes. The host's micro-architecture stays: an emulation of an AVX2-only CPU's
code paths, not a Zen 3.

The machine may be shared: repetitions are interleaved (every runtime and mode once per
repetition), so the ratios to torch-float32 of one repetition see the same load; read the
ratios, not the absolute rates.

    python socialgym_benchmarks/perf/cpu_runtimes.py                         # defaults below
    python socialgym_benchmarks/perf/cpu_runtimes.py --emulate-avx2          # AVX2-only emulation
    python socialgym_benchmarks/perf/cpu_runtimes.py --decisions 4 --reps 1  # smoke
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_benchmarks.perf.isa import EMULATION_MARK, emulation_line, rerun_as_avx2  # noqa: E402

RUNTIMES = ("torch-float32", "torch-bfloat16", "torch-int8", "onnxruntime-int8", "openvino-int8",
            "openvino-int8-bf16", "ctranslate2-int8")
BF16_RUNTIMES = ("torch-bfloat16", "openvino-int8-bf16")
REFERENCE = "torch-float32"
MODES = ("score", "constrained")
SCORE_ONLY = ("ctranslate2-int8",)
HOST_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
GAMES = "prisoners_dilemma,liars_dice,public_goods,centipede,rock_paper_scissors,sheriff_of_nottingham"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=GAMES)
    parser.add_argument("--episodes", type=int, default=2, help="recorded episodes per game")
    parser.add_argument("--decisions", type=int, default=24, help="decisions measured (spread over the record)")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", default="runs/cpu_runtimes_decisions.json",
                        help="the recorded decisions (reused when its games, episodes and seed match)")
    parser.add_argument("--emulate-avx2", action="store_true", help="run under AVX2-only ISA limits (see above)")
    return parser.parse_args(argv)


def host_line() -> str:
    from socialgym_agents.llm.loading import cpu_flags
    info = cpu_flags()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    have = [f for f in HOST_FLAGS if f in flags]
    lacks = [f for f in HOST_FLAGS if f not in flags]
    return f"host: {model}, {len(os.sched_getaffinity(0))} CPUs; has {' '.join(have)}; lacks {' '.join(lacks) or '-'}"


# ----------------------------------------------------------------------------- recording
def record_decisions(args) -> list:
    """The recorded decisions (see the module docstring), from ``--record`` when it matches."""
    path = Path(args.record)
    meta = {"games": args.games, "episodes": args.episodes, "seed": args.seed}
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("meta") == meta:
            return saved["decisions"]
    from socialgym_agents import make_policy
    from socialgym_agents.llm.hf_backend import HFBackend
    from socialgym_agents.runner import PolicyPool, run_jobs
    decisions: list = []
    original = HFBackend._score_group

    def recording(self, rows, suffixes):
        decisions.extend({"prompt": list(row.ids), "options": [list(t) for t in options]}
                         for row, options in zip(rows, suffixes))
        return original(self, rows, suffixes)
    HFBackend._score_group = recording
    try:
        policy = make_policy("smollm2?mode=score&dtype=float32&max_retries=0")
        run_jobs(_jobs(args), PolicyPool(prebuilt={"llm": policy}), max_concurrent_episodes=8)
    finally:
        HFBackend._score_group = original
    usable = [d for d in decisions if len(d["options"]) > 1 and all(d["options"])]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "decisions": usable}))
    return usable


def _jobs(args) -> list:
    import socialgym_env
    from socialgym_agents.runner import EpisodeJob
    from socialgym_benchmarks.tournament.plan import demo_config
    jobs = []
    for game in [g for g in args.games.split(",") if g]:
        seats = len(socialgym_env.make(game, **demo_config(game)).possible_agents)
        jobs += [EpisodeJob(game, args.seed + i, ["llm"] * seats, config=demo_config(game))
                 for i in range(args.episodes)]
    return jobs


def spread(decisions: list, count: int) -> list:
    """``count`` decisions spread evenly over the record (all of them when it has fewer)."""
    if len(decisions) <= count:
        return decisions
    return [decisions[round(i * (len(decisions) - 1) / max(1, count - 1))] for i in range(count)]


# ----------------------------------------------------------------------------- runtimes
class TorchRuntime:
    """The model through PyTorch in one dtype, with the runner's caches and packed weights."""

    def __init__(self, dtype: str):
        import torch

        from socialgym_agents.llm import loading
        from socialgym_agents.llm.packed import pack_linears, packing_available
        self.model, self.tokenizer = loading.load_model("smollm2", dtype)
        if dtype == "bfloat16" and loading.PACK_LINEARS and packing_available():
            pack_linears(self.model)
        self.torch = torch

    def _pass(self, cache, ids: list):
        logits = self.model(input_ids=self.torch.tensor([ids]), cache=cache, use_cache=True, logits_to_keep=1).logits
        return self.torch.log_softmax(logits[0, -1].float(), dim=-1).numpy()

    def start(self, ids: list):
        from socialgym_agents.llm.kv_cache import RoomyCache
        cache = RoomyCache(room=64)
        with self.torch.inference_mode():
            return cache, self._pass(cache, ids)

    def feed(self, cache, ids: list):
        with self.torch.inference_mode():
            return cache, self._pass(cache, ids)

    def score(self, prompt: list, options: list) -> list:
        from socialgym_agents.llm.kv_cache import RoomyCache
        from socialgym_agents.llm.scoring import _score_on
        with self.torch.inference_mode():
            return _score_on(self.model, self.tokenizer, prompt, options,
                             RoomyCache(room=max(len(o) for o in options)), 0)


class OnnxRuntime:
    """onnxruntime or OpenVINO on the shared int8 ONNX export (socialgym_agents.llm.runtimes)."""

    def __init__(self, runtime: str, precision: str = "f32"):
        from socialgym_agents.llm.runtimes import Forward
        self.forward = Forward(runtime, precision=precision)

    def start(self, ids: list):
        return self.forward.start(ids)

    def feed(self, state, ids: list):
        return self.forward.feed(state, ids)

    def score(self, prompt: list, options: list) -> list:
        return self.forward.score(*self.forward.start(prompt), options)


def make_runtime(name: str, tokenizer):
    if name.startswith("torch-"):
        return TorchRuntime(name.split("-", 1)[1])
    if name == "ctranslate2-int8":
        from socialgym_agents.llm.runtimes import CT2Scorer
        return CT2Scorer(tokenizer)
    return OnnxRuntime(name.split("-")[0], precision="bf16" if name.endswith("-bf16") else "f32")


def constrained_choice(runtime, prompt: list, options: list, eos: int) -> int:
    """Greedy decoding within the legal replies' tokens: the index of the reply it spells."""
    targets = [list(o) + [eos] for o in options]
    state, logprobs = runtime.start(prompt)
    chosen: list = []
    pending: list = []
    while True:
        live = [k for k, t in enumerate(targets) if t[:len(chosen)] == chosen]
        done = [k for k in live if len(targets[k]) == len(chosen)]
        if done:
            return done[0]
        allowed = {targets[k][len(chosen)] for k in live}
        if len(allowed) > 1 and pending:
            state, logprobs = runtime.feed(state, pending)
            pending = []
        token = allowed.pop() if len(allowed) == 1 else max(allowed, key=lambda t: logprobs[t])
        chosen.append(token)
        pending.append(token)


# ----------------------------------------------------------------------------- measuring
def run_once(runtime, mode: str, decisions: list, eos: int) -> tuple:
    started = time.perf_counter()
    if mode == "score":
        out = [runtime.score(d["prompt"], d["options"]) for d in decisions]
    else:
        out = [constrained_choice(runtime, d["prompt"], d["options"], eos) for d in decisions]
    return time.perf_counter() - started, out


def measure(runtimes: dict, modes: list, decisions: list, reps: int, eos: int) -> tuple:
    """Seconds per (runtime, mode) per repetition, interleaved, and each pair's last outputs."""
    pairs = [(name, mode) for name in runtimes for mode in modes if not (mode != "score" and name in SCORE_ONLY)]
    for name, mode in pairs:                                   # warm-up: first passes are slow
        run_once(runtimes[name], mode, decisions[:1], eos)
    seconds = {pair: [] for pair in pairs}
    outputs: dict = {}
    for rep in range(reps):
        for pair in pairs:
            took, outputs[pair] = run_once(runtimes[pair[0]], pair[1], decisions, eos)
            seconds[pair].append(took)
        print(f"  repetition {rep + 1}/{reps} done", flush=True)
    return seconds, outputs


def agreement(mode: str, mine: list, reference: list) -> str:
    import numpy as np
    if mode == "constrained":
        return f"same reply {np.mean([a == b for a, b in zip(mine, reference)]):5.0%}"
    top = np.mean([int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(mine, reference)])
    flat_mine = np.concatenate([np.asarray(a, float) for a in mine])
    flat_ref = np.concatenate([np.asarray(b, float) for b in reference])
    corr = float(np.corrcoef(flat_mine, flat_ref)[0, 1])
    gap = float(np.median(np.abs(flat_mine - flat_ref)))
    return f"same top {top:5.0%}  logprob r {corr:.4f}  median |diff| {gap:.3f}"


def _range(values: list, fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"


def report(seconds: dict, outputs: dict, decisions: list) -> dict:
    tokens = sum(len(d["prompt"]) for d in decisions)
    print(f"\n{len(decisions)} decisions, {tokens / len(decisions):.0f} prompt tokens and "
          f"{statistics.mean(len(d['options']) for d in decisions):.1f} legal replies each on average; "
          f"median [range] over repetitions")
    print(f"{'runtime':<20} {'mode':<12} {'decisions/s':>22} {'x ' + REFERENCE:>24}  agreement with {REFERENCE}")
    summary = {}
    for (name, mode), times in seconds.items():
        rates = [len(decisions) / s for s in times]
        reference = seconds.get((REFERENCE, mode))
        ratio = _range([r / s for r, s in zip(reference, times)], ".2f") + "x" if reference else ""
        agree = agreement(mode, outputs[(name, mode)], outputs[(REFERENCE, mode)]) \
            if (REFERENCE, mode) in outputs and name != REFERENCE else ""
        print(f"{name:<20} {mode:<12} {_range(rates, '.2f'):>22} {ratio:>24}  {agree}", flush=True)
        summary[f"{name} {mode}"] = {"rates": rates, "ratio": ratio, "agreement": agree}
    return summary


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.emulate_avx2:
        rerun_as_avx2(__file__, argv)
    print(host_line())
    print(emulation_line())
    print("shared machine: rates vary with other load; the interleaved ratios are the comparison")
    started = time.perf_counter()
    decisions = spread(record_decisions(args), args.decisions)
    print(f"{len(decisions)} recorded decisions ({time.perf_counter() - started:.0f}s)", flush=True)
    names = [n for n in args.runtimes.split(",") if n]
    if os.environ.get(EMULATION_MARK) == "avx2":
        names = [n for n in names if n not in BF16_RUNTIMES]
    from socialgym_agents.llm.loading import load_model
    tokenizer = load_model("smollm2", "float32")[1]
    runtimes = {name: make_runtime(name, tokenizer) for name in names}
    seconds, outputs = measure(runtimes, [m for m in args.modes.split(",") if m], decisions, args.reps,
                               tokenizer.eos_token_id)
    summary = report(seconds, outputs, decisions)
    print(f"total {time.perf_counter() - started:.0f}s")
    return summary


if __name__ == "__main__":
    main()
