"""The embedded SmolLM2 through a CPU inference runtime (``smollm2?runtime=openvino`` or
``runtime=onnxruntime``): the int8 export of :mod:`socialgym_agents.llm.runtimes` played with the
same prompts, grammar, sampling and replies as :class:`~socialgym_agents.llm.hf_backend.HFBackend`
(what the two share is :class:`~socialgym_agents.llm.hf_backend.LocalDecoding`). PyTorch stays the
reference and the training path; ``runtime=`` is part of the spec, so the two never rate as one.

A decision is one row, decoded one token per pass (OpenVINO's reading of the graph's attention
fails on batches of caches; onnxruntime's could take rows of one past length, not a tick's).
What makes ``mode=batched`` (the default) faster than ``mode=naive``, the baseline:

- seat caches: each seat's last token ids and key/value arrays (numpy) are kept, least recently
  used dropped beyond ``cache_mb``; a seat's next prompt encodes only what follows the longest
  prefix it shares with them;
- the shared prefix: a seat with no cache of its own (its first prompt) starts from another
  seat's cache when they share the game's description (``SHARE_MIN`` tokens or more);
- forced tokens: where the grammar allows one token it is taken without a pass, the tokens
  taken so are fed together with the next open choice's pass, and once one way is left to
  finish the reply it is written as text (as the torch backend does).

``mode=naive`` encodes every prompt whole, decodes every reply token with a pass of its own
and writes nothing as text: the same replies (up to floating-point ties), the slow way.

Sampling (``temperature > 0``): each row draws from its own generator, seeded by the request's
``sample_seed`` (:func:`~socialgym_agents.llm.batching.choose_tokens`), at every open choice and
never where the grammar leaves one token; so both modes draw alike and the same seed gives the
same transcript, byte for byte. (The torch backend also draws at forced tokens: the two
backends' sampled replies differ, as their numbers do.)
"""
from __future__ import annotations

import importlib.util
import sys
import threading

from .backend import Completion
from .batching import choose_tokens, common_prefix_len, longest_shared_prefix
from .config import LLMConfig
from .guided import common_prefix
from .scoring import SeatCaches
from .hf_backend import CLOSE_RESERVE, GUIDED_EXTRA, SHARE_MIN, LocalDecoding, model_context

PACKAGES = {"openvino": "openvino", "onnxruntime": "onnxruntime"}
_SHARED: dict = {}          # process-wide: the tokenizer and context, one Forward per (runtime, threads)
_LOCK = threading.Lock()


def check_runtime(config: LLMConfig) -> None:
    """ValueError (one line) when ``runtime=`` names a runtime whose package is not installed;
    imports nothing."""
    package = PACKAGES.get(config.runtime)
    if package and importlib.util.find_spec(package) is None:
        raise ValueError(f"option runtime={config.runtime} needs the {package} package, not installed "
                         f"(pip install 'socialgym[runtimes]'), or give runtime=auto or runtime=torch")


# runtime=auto's choice by CPU, from llm_throughput.py's side-by-side runs of the main job's games
# (docs/benchmarks.md, "Which runtime serves the main job"): PyTorch's batched runner leads on both
# CPU types measured (bfloat16 where the CPU computes it natively; float32 on an emulated AVX2-only
# CPU, 1.26 decisions/s against onnxruntime's 1.07 and OpenVINO's 0.99): a tick's rows share each
# weight read there, while a runtime's export takes one row a pass. A CPU where a runtime wins is
# one line here.
AUTO_WITHOUT_BF16 = "torch"


def auto_runtime(flags: str = "") -> str:
    """What ``runtime=auto`` plays through on a CPU with these flags (default: this one's)."""
    from .runtimes import has_native_bf16
    return "torch" if has_native_bf16(flags) else AUTO_WITHOUT_BF16


def smollm2_backend(target: str, config: LLMConfig):
    """The smollm2 registration's factory: PyTorch (``runtime=torch``), a CPU runtime, or for
    ``runtime=auto`` :func:`auto_runtime`'s choice for this CPU (PyTorch on both CPU types measured),
    PyTorch where a chosen runtime does not import or its export does not build (one stderr line)."""
    from .hf_backend import HFBackend
    runtime = auto_runtime() if config.runtime == "auto" else config.runtime
    if runtime == "torch":
        return HFBackend(target, config)
    if config.runtime != "auto":
        return RuntimeBackend(target, config, runtime)
    from .runtimes import RuntimeUnavailable
    try:
        return RuntimeBackend(target, config, runtime)
    except (ImportError, RuntimeUnavailable) as err:
        print(f"smollm2 runtime=auto: playing through torch, {runtime} is unavailable ({err})", file=sys.stderr)
        return HFBackend(target, config)


def _tokenizer_and_context() -> tuple:
    """The embedded model's tokenizer (the one :func:`~socialgym_agents.llm.loading.load_model`
    gives, read from the same dense folder) and context length, without its weights."""
    with _LOCK:
        if "tokenizer" not in _SHARED:
            from transformers import AutoConfig, AutoTokenizer

            from .runtimes import _dense_model_dir
            folder = str(_dense_model_dir())
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            _SHARED["tokenizer"] = (tokenizer, model_context(AutoConfig.from_pretrained(folder, local_files_only=True)))
        return _SHARED["tokenizer"]


def _forward(runtime: str, threads: int):
    from .runtimes import Forward
    with _LOCK:
        if (runtime, threads) not in _SHARED:
            _SHARED[(runtime, threads)] = Forward(runtime, threads=threads)
        return _SHARED[(runtime, threads)]


class SeatStore(SeatCaches):
    """Each seat's last token ids and numpy key/value arrays: the torch backend's
    :class:`~socialgym_agents.llm.scoring.SeatCaches` (least recently used dropped beyond the
    budget; an evicted seat re-encodes its prompt), read in place rather than taken, and searched
    for another seat's prefix."""

    @staticmethod
    def size_of(past) -> int:
        return sum(k.nbytes + v.nbytes for k, v in past)

    def get(self, key):
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def drop(self, key) -> None:
        self.bytes -= self.entries.pop(key, (None, None, 0))[2]

    def shared_with(self, ids: list) -> tuple:
        """(length, past) of the longest prefix of ``ids`` another seat's entry holds (only
        entries that start with the same ``SHARE_MIN`` tokens are compared)."""
        return longest_shared_prefix(((cached, past) for cached, past, _ in self.entries.values()), ids, SHARE_MIN)


def _cut(past: list, length: int) -> list:
    """The first ``length`` positions of a key/value list (copied: the graph reads whole arrays)."""
    import numpy as np
    if past[0][0].shape[2] == length:
        return past
    return [(np.ascontiguousarray(k[:, :, :length]), np.ascontiguousarray(v[:, :, :length])) for k, v in past]


class RuntimeBackend(LocalDecoding):
    """The embedded SmolLM2's int8 export through ``runtime`` (see the module docstring)."""

    def __init__(self, model_name: str, config: LLMConfig, runtime: str):
        self.kind = runtime            # recorded in each decision's meta as ``backend``
        self.model_name = model_name
        self.config = config
        self.tokenizer, model_length = _tokenizer_and_context()
        self.forward = _forward(runtime, config.threads)
        self.context = config.context or model_length
        self.eos_ids = {self.tokenizer.eos_token_id}
        self.seats = SeatStore(config.cache_mb)
        self.stats = {"prompt_tokens": 0, "reused_tokens": 0, "encoded_tokens": 0, "generated_tokens": 0,
                      "forward_passes": 0, "seat_cache_peak_bytes": 0}

    def _vocab_size(self) -> int:
        return int(self.forward.head.shape[0])

    def release(self, key: tuple) -> None:
        self.seats.drop(key)

    @property
    def naive(self) -> bool:
        return self.config.mode == "naive"

    # ------------------------------------------------------------------ encoding
    def _feed(self, state, ids: list):
        self.stats["forward_passes"] += 1
        return self.forward.feed(state, ids)

    def _reusable(self, row) -> tuple:
        """(length, past) of the cache ``row`` may start from: its seat's, or another seat's
        holding more of its prompt (the game's description); (0, None) in naive mode."""
        if self.naive:
            return 0, None
        reuse, past = 0, None
        entry = self.seats.get(row.key)
        if entry is not None:
            reuse, past = common_prefix_len(entry[0], row.ids), entry[1]
        if reuse < len(row.ids) // 2:
            shared, shared_past = self.seats.shared_with(row.ids)
            if shared > reuse:
                reuse, past = shared, shared_past
        return min(reuse, len(row.ids) - 1), past

    def _prefill(self, row) -> tuple:
        """(state, next-token log-probabilities, reused tokens) after ``row``'s prompt."""
        reuse, past = self._reusable(row)
        state = (_cut(past, reuse), reuse) if reuse > 0 else self.forward.empty_state()
        state, logprobs = self._feed(state, row.ids[reuse:])
        return state, logprobs, max(reuse, 0)

    def _keep(self, key, ids: list, state) -> None:
        if not self.naive:
            self.seats.put(key, ids, state[0])
            self.stats["seat_cache_peak_bytes"] = max(self.stats["seat_cache_peak_bytes"], self.seats.peak_bytes)

    # ------------------------------------------------------------------ generation
    def complete(self, items: list) -> list:
        """One Reply (or the exception that prevented it) per Completion, in order; one at a time."""
        results = []
        for index, item in enumerate(items):
            try:
                results.append(self._decide(self._new_row(index, item)))
            except Exception as err:     # e.g. out of memory: that request fails, not the run
                results.append(err)
        return results

    def _allowed(self, row, generated: list, last_step: bool) -> tuple:
        """(done, mask): the tokens the row's grammar allows next (None: any token); done when
        the grammar cannot go on by tokens or the steps are spent (the rest is written as text)."""
        if row.guide is None:
            return False, None
        close = len(generated) >= self.config.max_new_tokens - CLOSE_RESERVE
        mask = row.guide.allowed(self._vocab_size(), close=close)
        if last_step or not bool(mask.any()):
            row.tail = row.guide.completion()
            row.guide.state = row.guide.grammar.advance(row.guide.state, row.tail)
            return True, None
        return False, mask

    def _choose(self, logprobs, mask, generator) -> int:
        """The next token: greedy or a draw from ``generator``, within ``mask``."""
        import torch
        logits = torch.from_numpy(logprobs).float()[None]
        if mask is not None:
            logits = logits.masked_fill(~mask[None], float("-inf"))
        cfg = self.config
        return int(choose_tokens(logits, None if generator is None else [generator], [True], cfg.temperature,
                                 cfg.top_p)[0])

    def _decide(self, row):
        """Decode one row: a pass only where the next token is an open choice (every token in
        naive mode), the tokens taken without one fed with the next pass."""
        import torch
        cfg = self.config
        state, logprobs, reused = self._prefill(row)
        fed = list(row.ids)
        generator = torch.Generator().manual_seed(row.sample_seed) if cfg.temperature > 0 else None
        limit = cfg.max_new_tokens + (GUIDED_EXTRA if row.guide is not None else 0)
        generated, pending, texts = [], [], [""]
        while len(generated) < limit:
            done, mask = self._allowed(row, generated, len(generated) == limit - 1)
            if done:
                break
            only = mask.nonzero()[:, 0] if mask is not None else None
            forced = only is not None and len(only) == 1      # no choice: no draw either
            if pending and (self.naive or not forced):
                state, logprobs = self._feed(state, pending)
                fed, pending = fed + pending, []
            token = int(only[0]) if forced else self._choose(logprobs, mask, generator)
            pending.append(token)
            if not self._accept(row, token, generated, texts, 0, write_rest=not self.naive):
                break
        self._keep(row.key, fed, state)
        self._count(row, reused, len(generated))
        return self._reply(row, generated, reused)

    # ------------------------------------------------------------------ scoring
    def score(self, items: list, candidates: list) -> list:
        """Per item, the log-probability of each candidate reply after the prompt (seat caches
        reused as in generation), or the exception that prevented it."""
        results = []
        for index, (item, cands) in enumerate(zip(items, candidates)):
            try:
                results.append(self._score_one(index, item, cands))
            except Exception as err:
                results.append(err)
        return results

    def _score_one(self, index: int, item: Completion, cands: list) -> list:
        common = common_prefix(cands) if len(cands) > 1 else cands[0]
        row = self._new_row(index, Completion(item.key, item.messages, item.sample_seed))
        row.ids, row.prefix_tokens = self._prompt_ids(Completion(item.key, item.messages), common)
        state, first, reused = self._prefill(row)
        self._keep(row.key, row.ids, state)
        self._count(row, reused, 0)
        options = [self.tokenizer.encode(c[len(common):], add_special_tokens=False) for c in cands]
        return self.forward.score(state, first, options)
