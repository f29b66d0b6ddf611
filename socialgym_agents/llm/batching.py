"""How the local backend (:mod:`socialgym_agents.llm.hf_backend`) lays out a tick's requests:
one :class:`Row` per request, rows cut into prefill groups and passes and into decode batches
(the layout is described in that module's docstring), and :class:`DecodeBatch`, the state of
one decode batch while its rows are decoded together, with the choice of each step's tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .guided import Guide

PREFILL_TOKENS = 3200  # padded tokens per prefill pass (see prefill_passes)


@dataclass
class Row:
    index: int
    key: tuple
    ids: list
    reuse: int                 # tokens of the seat cache usable as prefix
    kv: Optional[list]         # per layer (k, v), shape [1, heads, L, dim]
    sample_seed: int
    guide: Optional[Guide] = None   # constrained decoding state (None: free generation)
    prefix: str = ""                # reply text prefilled with the prompt (the forced prefix)
    prefix_tokens: int = 0          # its tokens, at the end of ``ids``
    tail: str = ""                  # text added without decoding (a reply closed by its grammar)


def longest_shared_prefix(entries, ids: list, min_shared: int) -> tuple:
    """(length, state) of the longest prefix of ``ids`` among ``entries`` ((ids, state) pairs);
    only entries whose first ``min_shared`` tokens equal ``ids``'s are compared. (0, None): none."""
    best, best_state = 0, None
    for cached, state in entries:
        if cached[:min_shared] == ids[:min_shared]:
            n = common_prefix_len(cached, ids)
            if n > best:
                best, best_state = n, state
    return best, best_state


def common_prefix_len(a: list, b: list) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def pack(items: list, length, budget: int, most: Optional[int] = None) -> list:
    """``items`` sorted by ``length(item)`` and cut into runs whose size x longest length stays
    within ``budget`` (a longer item runs alone) and that hold at most ``most`` items."""
    runs, current = [], []
    for item in sorted(items, key=length):
        if current and ((len(current) + 1) * length(item) > budget or (most and len(current) >= most)):
            runs.append(current)
            current = []
        current.append(item)
    return runs + [current] if current else runs


def similar_lengths(items: list, length) -> list:
    """``items`` in runs of similar ``length(item)``, shortest first: a run ends where the next
    item is over twice the run's shortest plus 256 (padding a short row to a long one costs
    more attention than one more weight pass)."""
    runs, current = [], []
    for item in sorted(items, key=length):
        if current and length(item) > 2 * length(current[0]) + 256:
            runs.append(current)
            current = []
        current.append(item)
    return runs + [current] if current else runs


def prefill_passes(rows: list) -> list:
    """``rows`` (similar new-suffix lengths) cut into prefill passes of at most
    ``PREFILL_TOKENS`` padded tokens: past a few thousand tokens a pass's activations outgrow
    the CPU caches and tokens/s falls (bfloat16: 5,700 tokens/s at 16 x 200, 4,300 at 32 x 200)."""
    return pack(rows, lambda r: len(r.ids) - r.reuse, PREFILL_TOKENS)


def prefill_groups(rows: list) -> list:
    """Rows with similar new-suffix lengths and similar cached lengths, for the prefill
    passes (a row pays attention over its group's longest cache, so a 300-token seat is
    not padded to a 3,000-token one)."""
    rows = sorted(rows, key=lambda r: len(r.ids) - r.reuse)
    groups, current = [], []
    for row in rows:
        suffix = len(row.ids) - row.reuse
        if current:
            smallest = len(current[0].ids) - current[0].reuse
            if suffix > smallest + smallest // 4 + 16:
                groups.append(current)
                current = []
        current.append(row)
    if current:
        groups.append(current)
    return [piece for group in groups for part in similar_lengths(group, lambda r: r.reuse)
            for piece in prefill_passes(part)]


def prefill_layout(rows: list) -> tuple:
    """(S, [c_i], C) of a prefill group: its input length (the longest new suffix), the cached
    tokens each row uses (a row with a shorter suffix re-encodes some of its cache instead of
    padding), and the longest of those."""
    span = max(len(r.ids) - r.reuse for r in rows)
    starts = [max(0, len(r.ids) - span) for r in rows]
    return span, starts, max(starts)


class DecodeBatch:
    """The rows of one decode batch while they are decoded together. ``slots[i]`` is the row at
    batch position ``i`` (finished rows leave the batch, the live ones move up), ``active[i]``
    whether it still decodes; ``generated`` and ``texts`` are per row, the batch's K/V cache,
    attention mask and next RoPE positions per position."""

    def __init__(self, rows: list, cache, mask, device, temperature: float):
        import torch
        self.rows = rows
        self.cache, self.mask = cache, mask
        self.generated = [[] for _ in rows]
        self.texts = [""] * len(rows)            # decoded text per row (the JSON stop reads it)
        self.slots = list(range(len(rows)))
        self.active = [True] * len(rows)
        self.next_pos = torch.tensor([len(r.ids) for r in rows], dtype=torch.long, device=device)
        self.guided = any(r.guide is not None for r in rows)
        # per row, so a row draws the same tokens whatever batch it is decoded in
        self.generators = [torch.Generator().manual_seed(r.sample_seed) for r in rows] if temperature > 0 else None

    def slot_rows(self) -> list:
        return [self.rows[r] for r in self.slots]

    def slot_generated(self) -> list:
        return [self.generated[r] for r in self.slots]

    def slot_generators(self) -> Optional[list]:
        return None if self.generators is None else [self.generators[r] for r in self.slots]

    def worth_retiring(self) -> bool:
        """Whether enough rows are done that copying the live ones' K/V pays."""
        return sum(self.active) <= len(self.slots) * 3 // 4

    def retire(self) -> None:
        """Drop the finished rows: the live ones move up in the cache, mask and positions."""
        import torch

        from .kv_cache import keep_rows
        kept = [i for i in range(len(self.slots)) if self.active[i]]
        keep = torch.tensor(kept, device=self.next_pos.device)
        self.cache = keep_rows(self.cache, kept)
        self.mask, self.next_pos = self.mask.index_select(0, keep), self.next_pos.index_select(0, keep)
        self.slots = [self.slots[i] for i in kept]
        self.active = [True] * len(kept)

    def step_inputs(self, pad_id: int):
        """The next forward pass's input ids and RoPE positions: each live row's last token (a
        finished one is fed padding, masked out); the mask gains the step's column."""
        import torch
        device = self.next_pos.device
        feed = torch.tensor([self.generated[r][-1] if self.active[i] else pad_id for i, r in enumerate(self.slots)],
                            device=device)
        flags = torch.tensor(self.active, dtype=torch.long, device=device)
        self.mask = torch.cat([self.mask, flags.unsqueeze(1)], dim=1)
        positions = self.next_pos.unsqueeze(1)
        self.next_pos = self.next_pos + flags
        return feed.unsqueeze(1), positions


def choose_tokens(logits, generators: Optional[list], active: list, temperature: float, top_p: float):
    """The next token of every batch position: the argmax (greedy), or a draw from each active
    row's own generator at ``temperature`` within the ``top_p`` nucleus."""
    import torch
    if generators is None:
        return logits.argmax(dim=-1)
    tokens = torch.zeros(logits.shape[0], dtype=torch.long)
    for i in range(logits.shape[0]):
        if not active[i]:
            continue
        # on the CPU: the seeded generators are CPU ones (same draws on every device)
        probs = torch.softmax(logits[i].cpu() / temperature, dim=-1)
        if top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < top_p
            sorted_probs = sorted_probs * keep
            probs = torch.zeros_like(probs).scatter(0, order, sorted_probs)
        tokens[i] = torch.multinomial(probs / probs.sum(), 1, generator=generators[i])[0]
    return tokens
