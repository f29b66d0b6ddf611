"""Local Hugging Face transformers decoding, with per-seat KV-cache reuse, batched decoding,
constrained replies and candidate scoring. Loading the model is :mod:`socialgym_agents.llm.loading`;
the rows' layout in passes and batches, and a decode batch's state, :mod:`socialgym_agents.llm.batching`.

Generation (``mode=batched``, the default). Each seat (``Request.key``) keeps the token ids and
per-layer key/value tensors of its last prompt+reply. A new prompt is compared token-wise with
them; the longest common prefix is reused (the cache is cropped to it) and only the rest is
encoded. The prompt template puts the static parts first and the growing history after them,
so a seat's next prompt shares everything up to the end of its previous history.

All requests of one tick (up to ``batch_size`` at a time) are handled in two stages:

1. Prefill, per group of rows with similar new-suffix lengths (fresh 600-token prompts apart
   from 60-token continuations), cut to at most ``PREFILL_TOKENS`` padded tokens (a CPU pass
   is fastest per token while its activations fit the caches), one forward pass per group,
   laid out so that all padding is on the left::

       row i:  [pad .. pad | cached K/V of seat i (c_i) | new input tokens (S)]

   where S is the longest new suffix of the group; a row whose own suffix is shorter
   re-encodes a few of its cached tokens (c_i = len(prompt_i) - S). Attention masks and RoPE
   positions are passed explicitly, so each row computes exactly what it would alone.
2. Decode: groups of similar total length form one decode batch, whose K/V buffer (its rows
   left-padded to one length) is allocated before its groups are prefilled: each group writes
   straight into its rows of it, and a seat's cached K/V, once copied there, leaves the seat
   store until the tick stores its extended cache. Every row of the batch is decoded together,
   one token per forward pass (this is where batching pays on CPU: a decode step costs about
   the same for 1 or 32 rows), and one batch is prefilled, decoded and stored before the
   next, so a tick holds one batch's K/V at a time. Rows stop at EOS, at ``max_new_tokens``,
   or (``stop_at_json``) once a complete JSON object was generated; a finished row is fed
   padding with mask 0, and the finished rows leave the batch by moving the live ones up
   within its buffer.

The batch's K/V live in buffers with room for the tick's decode steps
(:mod:`socialgym_agents.llm.kv_cache`): a step writes one token in place instead of transformers'
concatenation, which copied the whole cache per layer and step. After decoding, each row's
real-token K/V (the mask's ones) is kept for its seat; the per-seat caches live in an LRU
bounded by ``cache_mb`` (an evicted seat just re-encodes), and a tick's rows are decoded in
batches whose K/V buffers fit ``batch_kv_mb``: together the two bound the memory of the caches.

Constrained decoding (``Completion.grammar``, :mod:`socialgym_agents.llm.guided`): the characters every
legal reply starts with are appended to the prompt and prefilled; then, at each decode step, a
guided row's logits are masked to the tokens its grammar allows, and the row stops as soon as
the reply is complete, or as soon as only one way to complete it is left: that text (``erate",
"argument": ""}`` once ``coop`` is chosen) is written without decoding it token by token. Free text is closed ``CLOSE_RESERVE`` tokens before ``max_new_tokens``;
a reply may run up to ``GUIDED_EXTRA`` steps past it to finish its fixed text (and, should the
vocabulary ever fail to continue the grammar, the shortest legal completion is appended as
text), so every constrained reply is legal.

Scoring (:meth:`HFBackend.score`): the prompt plus the candidates' common prefix is prefilled
(with seat-cache reuse), then every candidate of every request is a row of one forward pass on
a copy of its prompt's cache; a candidate's score is the sum of its tokens' log-probabilities.

``mode=naive`` is the reference: one prompt, one ``model.generate`` per decision, whole prompt
re-encoded every turn. With greedy decoding both modes make the same decisions up to
floating-point ties (the benchmark and tests compare them).

Context overflow: the policy trims the oldest history lines to fit ``context - room for the
reply``; as a last guard the backend keeps the last tokens of an over-long prompt. Never a crash.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from .backend import Completion, Reply
from .batching import (DecodeBatch, Row, choose_tokens, common_prefix_len, longest_shared_prefix, pack, prefill_groups,
                       prefill_layout, similar_lengths)
from .config import LLMConfig
from .guided import Guide, common_prefix, forced_prefix, vocab_for
from .loading import configure_threads, load_model, resolve_device, resolve_dtype
from .parsing import json_object_complete

# A constrained reply may run past max_new_tokens to finish its fixed text (free text is closed
# CLOSE_RESERVE tokens before the limit); GUIDED_EXTRA bounds that overrun.
GUIDED_EXTRA = 48
CLOSE_RESERVE = 4
PREFIX_ALLOWANCE = 16    # context kept for the prefilled start of a constrained reply
SCORE_BATCH = 32    # candidate rows per scoring forward pass
SHARE_MIN = 48      # tokens another seat's cache must share with a prompt to be worth a look
# Bytes of every backend's seat caches now and at most (the memory benchmark reports it).
SEAT_CACHES = {"bytes": 0, "peak_bytes": 0}

def chat_ids(tokenizer, messages: list) -> list:
    """The token ids a chat model reads for ``messages`` (chat template + assistant header)."""
    out = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if hasattr(out, "keys") and "input_ids" in out:   # transformers 5 may return a BatchEncoding
        out = out["input_ids"]
    return list(out)


def prompt_ids(tokenizer, messages: list, prefix: str, context: int, max_new_tokens: int,
               guided: bool) -> tuple[list, int]:
    """The ids the model reads before a reply: the chat's (:func:`chat_ids`) followed by those of
    ``prefix`` (text the reply is known to start with), and the number of prefix tokens. A
    trainer playing the policy's seat builds its contexts with this too (:mod:`socialgym_training.multiturn`)."""
    ids = chat_ids(tokenizer, messages)
    prefix_ids = tokenizer.encode(prefix, add_special_tokens=False) if prefix else []
    limit = context - max_new_tokens - len(prefix_ids) - (GUIDED_EXTRA if guided else 0)
    if len(ids) > limit:          # last guard; the policy already trimmed history
        ids = ids[-limit:]
    return ids + prefix_ids, len(prefix_ids)


def model_context(model_config) -> int:
    """A model's context length from its config (2048 when it names none)."""
    return int(getattr(model_config, "max_position_embeddings", 2048) or 2048)


def prompt_budget(context: int, config: LLMConfig) -> int:
    """Tokens a first prompt may take in ``context``: room is kept for the reply and the re-asks.
    A function of the settings alone, so a logged conversation's trimming can be redone
    (:mod:`socialgym_agents.llm.transcript`)."""
    reply = config.max_new_tokens
    if config.constrained or config.mode == "score":
        reply += GUIDED_EXTRA + PREFIX_ALLOWANCE
    return max(64, context - reply - config.max_retries * (reply + 96))


class LocalDecoding:
    """What the local backends (this one and :class:`~socialgym_agents.llm.runtime_backend.RuntimeBackend`)
    share around the model: prompts measured and laid out, a request's row, a token accepted
    into a reply, the reply and the counters. Needs ``tokenizer``, ``context``, ``config``,
    ``eos_ids``, ``stats`` and ``_vocab_size()``."""

    def encode(self, messages: list) -> list:
        return chat_ids(self.tokenizer, messages)

    def prompt_budget(self) -> int:
        """Tokens a first prompt may take: the context minus room for the reply and the re-asks."""
        return prompt_budget(self.context, self.config)

    def fits(self, messages: list, share: float = 1.0) -> bool:
        """Whether ``messages`` take at most ``share`` of the prompt budget."""
        return len(self.encode(messages)) <= self.prompt_budget() * share

    def _prompt_ids(self, item: Completion, prefix: str = "") -> tuple[list, int]:
        """The prompt's token ids followed by those of ``prefix`` (text the reply is known to
        start with), and the number of prefix tokens."""
        return prompt_ids(self.tokenizer, item.messages, prefix, self.context, self.config.max_new_tokens,
                          item.grammar is not None)

    def _new_row(self, index: int, item: Completion) -> Row:
        """The row of one request: its reply's forced prefix prefilled with the prompt, its guide
        (if constrained) at the prefix's end; no cache to reuse yet."""
        prefix = forced_prefix(item.grammar) if item.grammar is not None else ""
        ids, prefix_tokens = self._prompt_ids(item, prefix)
        guide = None
        if item.grammar is not None:
            guide = Guide(item.grammar, vocab_for(self.tokenizer, self._vocab_size()), prefix)
        return Row(index, item.key, ids, 0, None, item.sample_seed, guide, prefix, prefix_tokens)

    def _count(self, row, reused: int, new_tokens: int) -> None:
        self.stats["prompt_tokens"] += len(row.ids)
        self.stats["reused_tokens"] += reused
        self.stats["encoded_tokens"] += len(row.ids) - reused
        self.stats["generated_tokens"] += new_tokens

    def _reply(self, row, generated: list, reused: int) -> Reply:
        """The reply of a decoded row (one out of steps is closed by its grammar's text)."""
        if row.guide is not None and not row.guide.finished:
            row.tail = row.guide.completion()
        text = row.prefix + self.tokenizer.decode(generated, skip_special_tokens=True) + row.tail
        return Reply(text, {"prompt_tokens": len(row.ids) - row.prefix_tokens,
                            "prefilled_reply_tokens": row.prefix_tokens, "reused_tokens": reused,
                            "new_tokens": len(generated), "constrained": row.guide is not None,
                            **({"reasoning_tokens": row.guide.reasoning_tokens}
                               if row.guide is not None and row.guide.grammar.action is not None else {})})

    def _accept(self, row, token: int, generated: list, texts: list, i: int, write_rest: bool = True) -> bool:
        """Append ``token`` to a row; False once the row is done (grammar finished, EOS, the
        token budget, or -- unconstrained -- a complete JSON object). ``write_rest``: once one
        way is left to finish a constrained reply, write it as text (the naive runtime decodes it)."""
        generated.append(token)
        if row.guide is not None:
            row.guide.advance(token)
            rest = None if row.guide.finished or not write_rest else row.guide.determined_rest()
            if rest:           # one way left to finish: write it, no decode step per token
                row.tail = rest
                row.guide.state = row.guide.grammar.advance(row.guide.state, rest)
            return not row.guide.finished
        if token in self.eos_ids or len(generated) >= self.config.max_new_tokens:
            return False
        if self.config.stop_at_json:
            texts[i] += self.tokenizer.decode([token], skip_special_tokens=True)
            if "}" in texts[i] and json_object_complete(texts[i]):
                return False
        return True


class HFBackend(LocalDecoding):
    """Local transformers generation for one policy (model shared process-wide)."""

    kind = "hf"

    def __init__(self, model_name: str, config: LLMConfig):
        self.model_name = model_name
        self.config = config
        configure_threads(config.threads)
        if config.adapter:   # a trained LoRA adapter merged into a copy of the base (socialgym_agents.llm.adapters)
            from .adapters import load_adapted
            device = resolve_device(config.device, config.dtype)
            self.model, self.tokenizer = load_adapted(model_name, config.adapter, resolve_dtype(config.dtype, device),
                                                      device)
        else:
            self.model, self.tokenizer = load_model(model_name, config.dtype, config.device, config.device_map)
        # Every input tensor is made where the model's first weights are (its embedding).
        self.device = self.model.get_input_embeddings().weight.device
        self._pack_linears()
        from .kv_cache import kv_round_to
        self.kv_round = kv_round_to(self.model)      # what the seat caches keep keys and values in
        self._devices: Optional[list] = None       # per decoder layer (_layer_devices)
        self.context = config.context or model_context(self.model.config)
        self.eos_ids = self._eos_ids()
        self.pad_id = self.tokenizer.pad_token_id
        self._seat_cache: OrderedDict = OrderedDict()   # key -> (ids, [(k, v)...], nbytes)
        self._cache_bytes = 0
        self.stats = {"prompt_tokens": 0, "reused_tokens": 0, "encoded_tokens": 0, "generated_tokens": 0,
                      "forward_passes": 0, "seat_cache_peak_bytes": 0}

    def _pack_linears(self) -> None:
        """A bfloat16 model on a CPU without AMX computes its Linear layers from weights packed
        once (socialgym_agents.llm.packed: the same numbers, faster decode steps)."""
        import torch

        from . import loading
        from .packed import pack_linears, packing_available
        if loading.PACK_LINEARS and not self.config.device_map and self.device.type == "cpu" \
                and self.model.get_input_embeddings().weight.dtype == torch.bfloat16 and packing_available():
            pack_linears(self.model)

    # ------------------------------------------------------------------ prompts
    def _eos_ids(self) -> set:
        ids = set()
        for source in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None)):
            if isinstance(source, int):
                ids.add(source)
            elif source:
                ids.update(source)
        return ids

    def release(self, key: tuple) -> None:
        entry = self._seat_cache.pop(key, None)
        if entry is not None:
            self._account(-entry[2])

    def _account(self, nbytes: int) -> None:
        self._cache_bytes += nbytes
        SEAT_CACHES["bytes"] += nbytes
        SEAT_CACHES["peak_bytes"] = max(SEAT_CACHES["peak_bytes"], SEAT_CACHES["bytes"])
        self.stats["seat_cache_peak_bytes"] = max(self.stats["seat_cache_peak_bytes"], self._cache_bytes)

    # ------------------------------------------------------------------ entry point
    def _rows(self, items: list, reuse_cache: bool = True) -> list:
        rows = []
        for index, item in enumerate(items):
            row = self._new_row(index, item)
            ids = row.ids
            entry = self._seat_cache.get(item.key) if reuse_cache else None
            if entry is not None:
                row.reuse = min(common_prefix_len(entry[0], ids), len(ids) - 1)
                row.kv = entry[1] if row.reuse > 0 else None
                self._seat_cache.move_to_end(item.key)
            if reuse_cache and row.reuse < len(ids) // 2:
                shared, shared_kv = self._shared_prefix(ids)
                if shared > row.reuse:
                    row.reuse, row.kv = min(shared, len(ids) - 1), shared_kv
            rows.append(row)
        return rows

    def _shared_prefix(self, ids: list) -> tuple[int, Optional[list]]:
        """The longest prefix of ``ids`` that another seat's cache holds, and that cache. A
        seat's first prompt starts with the game's description, which every seat of the game
        shares, so it is encoded once, not once per seat (the cache is only read)."""
        return longest_shared_prefix(((cached, kv) for cached, kv, _ in self._seat_cache.values()), ids, SHARE_MIN)

    def _encode_shared_prefixes(self, rows: list) -> None:
        """Rows of one tick that start alike (the first prompts of every seat of a game share its
        description) and have no cache to reuse: their common prefix is encoded once, kept as a
        cache entry of its own, and every one of them reuses it."""
        alike: dict = {}
        for row in rows:
            if row.reuse < len(row.ids) // 2 and len(row.ids) > SHARE_MIN:
                alike.setdefault(tuple(row.ids[:SHARE_MIN]), []).append(row)
        for group in alike.values():
            if len(group) < 2:
                continue
            shared = min(min(common_prefix_len(group[0].ids, row.ids) for row in group[1:]),
                         *(len(r.ids) - 1 for r in group))
            if shared <= max(row.reuse for row in group):
                continue
            prefix = group[0].ids[:shared]
            key = ("shared-prefix", hash(tuple(prefix)))
            cache, mask, _, _ = self._prefill([Row(-1, key, prefix, 0, None, 0)])
            self.stats["encoded_tokens"] += shared
            self._store(key, prefix, cache, mask[0].bool(), 0)
            entry = self._seat_cache.get(key)
            if entry is not None:
                for row in group:
                    row.reuse, row.kv = shared, entry[1]

    def _vocab_size(self) -> int:
        """Logits per token: the output layer's width (an int8 layer has no float ``weight``)."""
        head = self.model.get_output_embeddings()
        return int(getattr(head, "out_features", None) or head.weight.shape[0])

    def complete(self, items: list) -> list:
        """One Reply (or the exception that prevented it) per Completion, in order."""
        import torch
        with torch.inference_mode():
            if self.config.mode == "naive":
                rows = self._rows(items, reuse_cache=False)
                return [self._naive(row) for row in rows]
            rows = self._rows(items)
            self._encode_shared_prefixes(rows)
            return self._batched(rows)

    # ------------------------------------------------------------------ naive reference
    def _naive(self, row: Row) -> Reply:
        import torch
        cfg = self.config
        ids = row.ids
        if cfg.temperature > 0 or row.guide is not None:
            # sampling / constrained reference: the same sampler and guide as batched, no cache reuse
            return self._decode_group([row], store=False)[0]
        from transformers import StoppingCriteria, StoppingCriteriaList
        tokenizer = self.tokenizer

        class _JsonStop(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                text = tokenizer.decode(input_ids[0, len(ids):], skip_special_tokens=True)
                return torch.tensor([json_object_complete(text)], dtype=torch.bool)

        from .kv_cache import RoomyCache
        input_ids = torch.tensor([ids], device=self.device)
        stopping = StoppingCriteriaList([_JsonStop()]) if cfg.stop_at_json else None
        # the batched runner's cache, so both attend over the same (rounded) keys and values
        out = self.model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                                  cache=RoomyCache(round_to=self.kv_round),
                                  max_new_tokens=cfg.max_new_tokens, stopping_criteria=stopping,
                                  pad_token_id=self.pad_id, eos_token_id=sorted(self.eos_ids),
                                  temperature=None, top_p=None, top_k=None)
        generated = out[0, len(ids):].tolist()
        self.stats["prompt_tokens"] += len(ids)
        self.stats["encoded_tokens"] += len(ids)
        self.stats["generated_tokens"] += len(generated)
        text = self.tokenizer.decode(generated, skip_special_tokens=True)
        return Reply(text, {"prompt_tokens": len(ids), "reused_tokens": 0, "new_tokens": len(generated)})

    # ------------------------------------------------------------------ batched with cache reuse
    def _batched(self, rows: list) -> list:
        results: list = [None] * len(rows)
        for chunk in self._decode_chunks(rows):
            try:
                replies = self._decode_group(chunk)
            except Exception as err:  # e.g. out of memory: those requests fail, not the run
                replies = [err] * len(chunk)
            for row, reply in zip(sorted(chunk, key=lambda r: r.index), replies):   # replies come by index
                results[row.index] = reply
        return results

    def _decode_chunks(self, rows: list) -> list:
        """The tick's rows in decode batches of at most ``batch_size`` rows whose K/V buffers
        (rows x (longest prompt + decode room) tokens) fit ``batch_kv_mb``, shortest prompts
        first. The budget bounds the memory of a tick: at 64 live episodes a single batch of
        every row held 1.5 GB of bfloat16 K/V (and, before the groups were prefilled into the
        batch's buffer, twice that while their caches were merged into it)."""
        room = self.config.max_new_tokens + GUIDED_EXTRA
        return pack(rows, lambda r: len(r.ids) + room, self.kv_token_budget(), self.config.batch_size)

    def kv_token_budget(self) -> int:
        """Context tokens whose keys and values fit ``batch_kv_mb``."""
        return self.config.batch_kv_mb * 2**20 // self.kv_bytes_per_token()

    def kv_bytes_per_token(self) -> int:
        """Bytes of keys and values one token holds in the cache, over all layers."""
        heads, head_dim = self._kv_heads()
        itemsize = next(self.model.parameters()).element_size()
        return 2 * self.model.config.num_hidden_layers * heads * head_dim * itemsize

    def _kv_heads(self) -> tuple:
        """(key/value heads, head size) of the model's attention."""
        cfg = self.model.config
        heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        return heads, getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads

    # ------------------------------------------------------------------ scoring candidates
    def score(self, items: list, candidates: list) -> list:
        """Per item, the log-probability of each candidate reply (full text, e.g. a JSON action)
        after the prompt, or the exception that prevented it. The candidates' common prefix is
        prefilled with the prompt (reusing the seat's KV cache); then every candidate of every
        item is one row of a batched forward pass on top of its prompt's cache."""
        import torch
        with torch.inference_mode():
            rows = []
            suffixes = []
            for index, (item, cands) in enumerate(zip(items, candidates)):
                common = common_prefix(cands) if len(cands) > 1 else cands[0]
                item = Completion(item.key, item.messages, item.sample_seed)
                row = self._rows([item])[0]
                row.ids, row.prefix_tokens = self._prompt_ids(item, common)
                row.index, row.reuse = index, min(row.reuse, len(row.ids) - 1)
                rows.append(row)
                suffixes.append([self.tokenizer.encode(c[len(common):], add_special_tokens=False) for c in cands])
            self._encode_shared_prefixes(rows)
            results: list = [None] * len(rows)
            # Prompt caches of at most batch_size rows within batch_kv_mb, as in decoding.
            for chunk in pack(rows, lambda r: len(r.ids), self.kv_token_budget(), self.config.batch_size):
                try:
                    scores = self._score_group(chunk, [suffixes[r.index] for r in chunk])
                except Exception as err:
                    scores = [err] * len(chunk)
                for row, value in zip(chunk, scores):
                    results[row.index] = value
            return results

    def reply_features(self, items: list, candidates: list) -> list:
        """Per item, the decision head's feature matrix of its candidates (one row each, after
        the prompt and their common prefix; :func:`socialgym_agents.llm.decision_head.reply_features`),
        or the exception that prevented it. A seat's context is encoded from where its last one
        ended (a cache of its own, apart from generation's)."""
        import torch

        from .decision_head import reply_features
        from .scoring import SeatCaches
        if getattr(self, "_feature_caches", None) is None:
            self._feature_caches = SeatCaches(self.config.cache_mb)
        out = []
        with torch.inference_mode():
            for item, cands in zip(items, candidates):
                common = common_prefix(cands) if len(cands) > 1 else cands[0]
                ids, _ = self._prompt_ids(Completion(item.key, item.messages, item.sample_seed), common)
                try:
                    out.append(reply_features(self.model, self.tokenizer, ids, [c[len(common):] for c in cands],
                                              self._feature_caches, item.key))
                except Exception as err:
                    out.append(err)
        return out

    def _score_group(self, rows: list, suffixes: list) -> list:
        import torch
        from .kv_cache import select_rows
        by_index = {row.index: s for row, s in zip(rows, suffixes)}
        out_scores: dict = {}
        for group in prefill_groups(rows):
            prompt_cache, mask, last_logits, starts = self._prefill(group)
            first = torch.log_softmax(last_logits, dim=-1)
            for i, (row, c) in enumerate(zip(group, starts)):
                self.stats["prompt_tokens"] += len(row.ids)
                self.stats["reused_tokens"] += c
                self.stats["encoded_tokens"] += len(row.ids) - c
                self._store(row.key, row.ids, prompt_cache, mask[i].bool(), i)
                out_scores[row.index] = [0.0] * len(by_index[row.index])
            flat = [(i, c) for i, row in enumerate(group) for c, toks in enumerate(by_index[row.index]) if toks]
            lengths = torch.tensor([len(row.ids) for row in group], device=self.device)
            # Each candidate row gets its own copy of its prompt's cache (mask.shape[1] positions)
            # plus its tokens: the copies of a pass fit batch_kv_mb. Unbounded, 32 rows after a
            # 700-token prompt copied 1 GB of float32 keys and values per pass.
            for chunk in pack(flat, lambda ic: mask.shape[1] + len(by_index[group[ic[0]].index][ic[1]]),
                               self.kv_token_budget(), SCORE_BATCH):
                toks = [by_index[group[i].index][c] for i, c in chunk]
                for (i, c), t in zip(chunk, toks):
                    out_scores[group[i].index][c] = float(first[i, t[0]])
                width = max(len(t) for t in toks) - 1
                if width <= 0:
                    continue
                select = torch.tensor([i for i, _ in chunk], device=self.device)
                feed = torch.full((len(chunk), width), self.pad_id, dtype=torch.long, device=self.device)
                feed_mask = torch.zeros((len(chunk), width), dtype=torch.long, device=self.device)
                for j, t in enumerate(toks):
                    feed[j, :len(t) - 1] = torch.tensor(t[:-1])
                    feed_mask[j, :len(t) - 1] = 1
                cache = select_rows(prompt_cache, select, room=width)
                positions = lengths.index_select(0, select).unsqueeze(1) + torch.arange(width, device=self.device)[None]
                out = self.model(input_ids=feed, attention_mask=torch.cat([mask.index_select(0, select), feed_mask], 1),
                                 position_ids=positions, cache=cache, use_cache=True)
                self.stats["forward_passes"] += 1
                logprobs = torch.log_softmax(out.logits.float(), dim=-1)
                for j, ((i, c), t) in enumerate(zip(chunk, toks)):
                    if len(t) > 1:
                        picked = logprobs[j, torch.arange(len(t) - 1, device=logprobs.device),
                                          torch.tensor(t[1:], device=logprobs.device)]
                        out_scores[group[i].index][c] += float(picked.sum())
        return [out_scores[row.index] for row in rows]

    def _prefill(self, rows: list, room: int = 0, into=None):
        """Encode the new suffixes of ``rows`` on top of their cached prefixes (one forward).
        Returns (cache with all padding on the left and ``room`` positions to spare, mask,
        last logits, starts). ``into`` (a decode batch's cache, its rows, its length): the
        group's keys and values are written straight into those rows of it, right-aligned to
        that length, instead of a cache of the group's own that would then be copied into it.
        A row's own seat cache leaves the store once copied (its next one is stored after the
        tick), so the tick does not hold it twice, in the store and in the batch."""
        import torch
        from .kv_cache import RoomyCache, RoomyLayer, empty_cache
        batch = len(rows)
        span, starts, cached_len = prefill_layout(rows)
        pads = [span - (len(r.ids) - c) for r, c in zip(rows, starts)]
        input_ids = torch.full((batch, span), self.pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros((batch, cached_len + span), dtype=torch.long, device=self.device)
        positions = torch.zeros((batch, span), dtype=torch.long, device=self.device)
        for i, (row, c, pad) in enumerate(zip(rows, starts, pads)):
            real = row.ids[c:]
            input_ids[i, pad:] = torch.tensor(real)
            mask[i, cached_len - c:cached_len] = 1
            mask[i, cached_len + pad:] = 1
            positions[i, pad:] = torch.arange(c, c + len(real))
        if into is not None:
            target, first, length = into
            offset = length - cached_len - span
            cache = RoomyCache([RoomyLayer(layer.key_buffer[first:first + batch, :, offset:],
                                           layer.value_buffer[first:first + batch, :, offset:], cached_len)
                                for layer in target.layers], round_to=self.kv_round)
        elif cached_len:
            cache = empty_cache(next(r.kv for r, c in zip(rows, starts) if c), batch, cached_len, span + room,
                                self._kv_dtype(), self.kv_round)
        else:
            cache = RoomyCache(room=room, round_to=self.kv_round)
        if cached_len:
            for layer, target_layer in enumerate(cache.layers):
                for i, (row, c) in enumerate(zip(rows, starts)):
                    if c:
                        k, v = row.kv[layer]
                        target_layer.key_buffer[i, :, cached_len - c:cached_len] = k[0, :, :c]
                        target_layer.value_buffer[i, :, cached_len - c:cached_len] = v[0, :, :c]
        for row in rows:
            own = self._seat_cache.get(row.key)
            if row.kv is not None and own is not None and own[1] is row.kv:
                self.release(row.key)
            row.kv = None
        out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                         cache=cache, use_cache=True, logits_to_keep=1)
        self.stats["forward_passes"] += 1
        return out.cache, mask, out.logits[:, -1, :].float(), starts

    def _decode_group(self, rows: list, store: bool = True) -> list:
        """Prefill each suffix-length group straight into the decode batch it joins (groups of
        similar total length share one, their caches left-padded to one length) and decode each
        batch's rows together, one token per forward pass. A batch is prefilled, decoded and
        stored before the next is prefilled, so one batch's keys and values are held at a time."""
        room = self.config.max_new_tokens + GUIDED_EXTRA          # the most decode steps
        groups = [(group, prefill_layout(group)) for group in prefill_groups(rows)]
        batches = similar_lengths(groups, lambda g: g[1][0] + g[1][2])
        del groups
        replies = []
        while batches:
            batch = [group for group, _ in batches.pop(0)]
            rows = [row for group in batch for row in group]
            cache, mask, logits, starts = self._prefill_batch(batch, room)
            del batch
            generated = self._decode_loop(rows, cache, mask, logits, store)
            for i, row in enumerate(rows):
                self._count(row, starts[i], len(generated[i]))
                replies.append((row.index, self._reply(row, generated[i], starts[i])))
        return [reply for _, reply in sorted(replies, key=lambda ir: ir[0])]

    def _layer_devices(self) -> list:
        """The device of each decoder layer (accelerate's ``device_map`` may spread them)."""
        if self._devices is None:
            try:
                self._devices = [next(layer.parameters()).device for layer in self.model.get_decoder().layers]
            except (AttributeError, StopIteration):
                self._devices = [self.device] * self.model.config.num_hidden_layers
        return self._devices

    def _prefill_batch(self, groups: list, room: int):
        """One decode batch from prefill ``groups``: a cache of all their rows, left-padded to the
        longest group's length with ``room`` to spare, each group prefilled into its own rows
        (:meth:`_prefill`), and the batch's mask, last logits and starts."""
        import torch
        from .kv_cache import zero_cache
        length = max(span + cached_len for span, _, cached_len in map(prefill_layout, groups))
        heads, head_dim = self._kv_heads()
        cache = zero_cache(self._layer_devices(), (sum(len(g) for g in groups), heads, length, head_dim), room,
                           self._kv_dtype(), self.kv_round)
        masks, logits, starts, first = [], [], [], 0
        for group in groups:
            _, mask, last, group_starts = self._prefill(group, into=(cache, first, length))
            masks.append(torch.cat([mask.new_zeros(mask.shape[0], length - mask.shape[1]), mask], dim=1))
            logits.append(last)
            starts += group_starts
            first += len(group)
        return cache, torch.cat(masks), torch.cat(logits), starts

    def _kv_dtype(self):
        """The dtype the projections give the keys, which a pass's cache holds: autocast's (a
        float32 model under a bfloat16 autocast writes bfloat16 keys), else the weights'."""
        import torch
        return torch.get_autocast_dtype(self.device.type) if torch.is_autocast_enabled(self.device.type) \
            else next(self.model.parameters()).dtype

    def _decode_loop(self, rows, cache, mask, logits, store: bool):
        """Decode every row together until each is done; returns the tokens per row. A row
        leaves the batch soon after it is done (its K/V kept for its seat first, if ``store``):
        a finished short reply must not keep paying for a long one's decode steps."""
        cfg = self.config
        batch = DecodeBatch(rows, cache, mask, self.device, cfg.temperature)
        limit = cfg.max_new_tokens + (GUIDED_EXTRA if batch.guided else 0)
        for step in range(limit):
            if batch.guided:
                logits = self._mask_guided(batch.slot_rows(), logits, batch.slot_generated(), batch.active,
                                           step == limit - 1)
            tokens = choose_tokens(logits, batch.slot_generators(), batch.active, cfg.temperature, cfg.top_p)
            for i, r in enumerate(batch.slots):
                if batch.active[i]:
                    batch.active[i] = self._accept(rows[r], int(tokens[i]), batch.generated[r], batch.texts, r)
            if not any(batch.active) or step == limit - 1:
                break
            if batch.worth_retiring():
                if store:
                    self._store_slots(batch, finished_only=True)
                batch.retire()
            logits = self._decode_step(batch)
        if store:
            self._store_slots(batch)
        return batch.generated

    def _decode_step(self, batch: DecodeBatch):
        """One forward pass of ``batch``, one token per row; returns the next logits."""
        feed, positions = batch.step_inputs(self.pad_id)
        out = self.model(input_ids=feed, attention_mask=batch.mask, position_ids=positions,
                         cache=batch.cache, use_cache=True, logits_to_keep=1)
        self.stats["forward_passes"] += 1
        batch.cache = out.cache
        return out.logits[:, -1, :].float()

    def _store_slots(self, batch: DecodeBatch, finished_only: bool = False) -> None:
        """Keep the K/V of the batch's rows (or of its finished ones) for their seats."""
        for i, r in enumerate(batch.slots):
            if not (finished_only and batch.active[i]):
                row = batch.rows[r]
                self._store(row.key, row.ids + batch.generated[r][:-1], batch.cache, batch.mask[i].bool(), i)

    def _mask_guided(self, rows, logits, generated, active, last_step: bool):
        """Logits of guided rows restricted to the tokens their grammar allows next. A row whose
        grammar the vocabulary cannot continue (or that runs out of steps) is closed by text."""
        cfg = self.config
        for i, row in enumerate(rows):
            if not active[i] or row.guide is None:
                continue
            close = len(generated[i]) >= cfg.max_new_tokens - CLOSE_RESERVE
            mask = row.guide.allowed(logits.shape[-1], close=close)
            if last_step or not bool(mask.any()):
                row.tail = row.guide.completion()
                row.guide.state = row.guide.grammar.advance(row.guide.state, row.tail)
                active[i] = False
                continue
            logits[i] = logits[i].masked_fill(~mask.to(logits.device), float("-inf"))
        return logits

    def _store(self, key, ids: list, cache, row_mask, row: int) -> None:
        """Keep seat ``key``'s real-token K/V (the mask's ones) for its next turn."""
        kv = []
        nbytes = 0
        row_mask = row_mask[: cache.layers[0].keys.shape[2]]
        kept = row_mask.nonzero()[:, 0]
        # the ones are one run (left padding before, finished steps after): a copy of a slice,
        # 5x faster than gathering by the mask
        span = slice(int(kept[0]), int(kept[-1]) + 1) if len(kept) and int(kept[-1]) - int(kept[0]) + 1 == len(kept) else None
        kept_dtype = self.kv_round or cache.layers[0].keys.dtype    # rounded values: kept exactly
        for layer in cache.layers:
            if span is not None:
                k, v = (t[row:row + 1, :, span].to(kept_dtype, copy=True) for t in (layer.keys, layer.values))
            else:
                k, v = (t[row:row + 1].index_select(2, kept).to(kept_dtype) for t in (layer.keys, layer.values))
            kv.append((k, v))
            nbytes += k.element_size() * k.nelement() * 2
        if kv and kv[0][0].shape[2] != len(ids):   # should not happen; never reuse a bad cache
            self.release(key)
            return
        self.release(key)
        budget = self.config.cache_mb * 2**20
        while self._seat_cache and self._cache_bytes + nbytes > budget:   # room first: the budget is a bound
            _, (_, _, freed) = self._seat_cache.popitem(last=False)
            self._account(-freed)
        self._seat_cache[key] = (ids, kv, nbytes)
        self._account(nbytes)

