"""Scoring a finite list of replies with a local causal LM: the log-probability of each reply's
tokens after a context of token ids. Self-play's scoring-mode decisions and the exploitability
of an LLM's action distribution (``socialgym_training.selfplay``) are made of it; the LLM policy's own
scoring mode (:meth:`socialgym_agents.llm.hf_backend.HFBackend.score`) works on its seats' caches
instead."""
from __future__ import annotations

from collections import OrderedDict

SCORE_TOKENS = 4096      # option tokens per forward pass on a context's cache: bounds the logits' memory
# Every option row of a pass gets its own copy of its context's keys and values: this bounds the
# positions copied per pass (~0.75 GB for SmolLM2 in float32), e.g. 90 bids after a 2,000-token chat.
CACHE_TOKENS = 16384


class SeatCaches:
    """Each seat's key/value cache of the last context it was scored on, within ``budget_mb``
    (the least recently used dropped first). A seat's conversation grows turn by turn (its next
    context is its last one, its reply and the news), so :func:`score_replies` encodes only what
    is new for a seat found here instead of its whole context."""

    def __init__(self, budget_mb: int = 1024):
        self.budget = budget_mb << 20
        self.entries: OrderedDict = OrderedDict()        # key -> (ids, cache, bytes)
        self.bytes = 0                                   # of the entries held
        self.peak_bytes = 0                              # the most they held at once

    def take(self, key, context: list) -> tuple:
        """(cache, length it holds) for ``key`` if its ids are a proper prefix of ``context``, else
        (None, 0); the entry leaves the store either way (the caller extends the cache in place)."""
        ids, cache, size = self.entries.pop(key, (None, None, 0))
        self.bytes -= size
        if ids is not None and len(ids) < len(context) and context[:len(ids)] == ids:
            return cache, len(ids)
        return None, 0

    def take_common(self, key, context: list) -> tuple:
        """Like :meth:`take`, but the kept cache is cut back to the longest prefix its ids share
        with ``context`` (leaving at least one token to encode): a seat's last context ended in
        its reply's forced start, which the next context holds tokenised with the whole reply."""
        ids, cache, size = self.entries.pop(key, (None, None, 0))
        self.bytes -= size
        shared = min(common_length([ids, context]), len(context) - 1) if ids is not None else 0
        if shared <= 0:
            return None, 0
        for layer in cache.layers:        # RoomyLayer: positions past `length` are overwritten next
            layer.length = shared
            layer._expose()
        return cache, shared

    @staticmethod
    def size_of(cache) -> int:
        return sum(2 * layer.key_buffer.element_size() * layer.key_buffer.nelement() for layer in cache.layers)

    def put(self, key, ids: list, cache) -> None:
        size = self.size_of(cache)
        if size > self.budget:
            return
        self.bytes -= self.entries.pop(key, (None, None, 0))[2]
        self.entries[key] = (list(ids), cache, size)
        self.bytes += size
        while self.bytes > self.budget:
            self.bytes -= self.entries.popitem(last=False)[1][2]
        self.peak_bytes = max(self.peak_bytes, self.bytes)

    def clear(self) -> None:
        self.entries.clear()
        self.bytes = 0


def score_replies(model, tokenizer, contexts: list, options: list, with_eos: bool = True,
                  seats: "SeatCaches | None" = None, keys: "list | None" = None) -> list:
    """Per context, the log-probability of each option's tokens (plus EOS after it with
    ``with_eos``: the env-text layouts; the policy's scoring mode, which ``prompt=turns`` plays,
    scores the reply text alone).

    Each context is encoded once and its options are scored as one batch on top of its key/value
    cache; the prefix all contexts share (the system prompt and rules, about a third of a
    seat's first prompt) is encoded once per call. Scoring every option over its whole context,
    as a plain forward per (context, option) row would, costs about as many context encodings as
    there are legal replies (12 opening bids in two-player, one-die Liar's Dice). With ``seats``
    (a :class:`SeatCaches`) and ``keys`` (one per context, e.g. the seat), a context that extends
    the one its key was last scored on is encoded from there, and its cache is kept for the next.
    The log-probabilities are those of that plain forward up to float rounding (``tests/training/test_selfplay.py``);
    ``socialgym_benchmarks/perf/score_replies.py`` times the two side by side."""
    import torch
    eos = tokenizer.eos_token_id
    option_ids = [[tokenizer(text, add_special_tokens=False)["input_ids"] + ([eos] if with_eos else [])
                   for text in texts] for texts in options]
    contexts = [list(c) for c in contexts]
    keys = list(keys) if keys is not None else [None] * len(contexts)
    kept = [seats.take(key, c) if seats is not None else (None, 0) for key, c in zip(keys, contexts)]
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        start_cache = _fresh_starts(model, [c for c, (cache, _) in zip(contexts, kept) if cache is None])
        for context, ids, (cache, begin), key in zip(contexts, option_ids, kept, keys):
            if cache is None:
                cache, begin = start_cache(context, max([len(t) for t in ids] + [1]))
            out.append(_score_on(model, tokenizer, context, ids, cache, begin))
            if seats is not None:
                seats.put(key, context, cache)
    if was_training:
        model.train()
    return out


def _fresh_starts(model, contexts: list):
    """``start(context, width) -> (cache, encoded length)`` for contexts without a seat cache:
    the prefix they all share encoded once (every context keeps a token to predict from)."""
    import torch
    from .kv_cache import RoomyCache, kv_round_to, select_rows
    device = model.get_input_embeddings().weight.device
    round_to = kv_round_to(model)
    shared = common_length(contexts) if len(contexts) > 1 else 0
    shared = min([shared] + [len(c) - 1 for c in contexts])
    shared_cache = None
    if shared > 0:
        shared_cache = RoomyCache(round_to=round_to)
        model(input_ids=torch.tensor([contexts[0][:shared]], device=device), cache=shared_cache, use_cache=True)

    def start(context: list, width: int) -> tuple:
        if shared_cache is None:
            return RoomyCache(room=width, round_to=round_to), 0
        return select_rows(shared_cache, torch.zeros(1, dtype=torch.long), room=len(context) - shared + width), shared
    return start


def _score_on(model, tokenizer, context: list, ids: list, cache, begin: int) -> list:
    """The options' log-probabilities after ``context``, whose first ``begin`` tokens ``cache``
    holds (it is extended in place to the whole context and left so)."""
    import torch
    from .kv_cache import select_rows
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    device = model.get_input_embeddings().weight.device
    width = max([len(t) for t in ids] + [1])
    last = model(input_ids=torch.tensor([context[begin:]], device=device), cache=cache,
                 use_cache=True).logits[0, -1].float()
    first = torch.log_softmax(last, dim=-1)
    values = [float(first[t[0]]) if t else 0.0 for t in ids]
    longer = [k for k, t in enumerate(ids) if len(t) > 1]
    step = max(1, min(SCORE_TOKENS // width, CACHE_TOKENS // (len(context) + width)))
    for start in range(0, len(longer), step):
        chunk = longer[start:start + step]
        feed_width = max(len(ids[k]) for k in chunk) - 1
        feed = torch.full((len(chunk), feed_width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), len(context) + feed_width), dtype=torch.long)
        mask[:, :len(context)] = 1
        for row, k in enumerate(chunk):
            feed[row, :len(ids[k]) - 1] = torch.tensor(ids[k][:-1])
            mask[row, len(context):len(context) + len(ids[k]) - 1] = 1
        positions = len(context) + torch.arange(feed_width)[None].expand(len(chunk), -1)
        rows = select_rows(cache, torch.zeros(len(chunk), dtype=torch.long), room=feed_width)
        logits = model(input_ids=feed.to(device), attention_mask=mask.to(device),
                       position_ids=positions.to(device), cache=rows, use_cache=True).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        for row, k in enumerate(chunk):
            picked = logprobs[row, torch.arange(len(ids[k]) - 1, device=logprobs.device),
                              torch.tensor(ids[k][1:], device=logprobs.device)]
            values[k] += float(picked.sum())
        del logits, logprobs
    return values


def common_length(sequences: list) -> int:
    """Length of the prefix every sequence shares."""
    first, n = sequences[0], min(len(s) for s in sequences)
    for other in sequences[1:]:
        k = 0
        while k < n and other[k] == first[k]:
            k += 1
        n = k
    return n
