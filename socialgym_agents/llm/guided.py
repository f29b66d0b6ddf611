"""Token-level guidance: which vocabulary tokens keep a reply inside a :class:`ReplyGrammar`.

Our own small implementation on transformers' logits (no extra dependency), because it has to
run inside the batched runner's hand-written decode loop (per-row KV caches, left padding, rows
finishing at different steps), where a ``generate()`` logits processor does not apply:

- :class:`Vocab` decodes every token id once per tokenizer and stores the texts as a character
  trie, plus boolean masks of the tokens that are plain free text (no quote, backslash, control
  character; byte fragments of a multi-byte character are left out).
- :class:`Guide` follows one reply. Inside free text the allowed set is the precomputed mask
  (cut to the characters left) plus the tokens that close the string; anywhere else it is a
  walk of the vocabulary trie along the grammar (for a finite list: only the tokens that are
  prefixes of some legal reply's remaining text). A token never mixes fixed text and free
  text, so free text starts and ends on token boundaries.
- The characters every legal reply starts with (``{"action_type": "`` ...) are not decoded at
  all: they are appended to the prompt and prefilled (:meth:`ReplyGrammar.forced_prefix`).
"""
from __future__ import annotations

from .constraint import END, FreeText, ReplyGrammar

_VOCABS: dict = {}


class Vocab:
    """A tokenizer's vocabulary as texts, a character trie and free-text masks."""

    def __init__(self, tokenizer, size: int):
        import torch
        excluded = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        self.texts: list = []
        self.trie: dict = {}
        text_ok = torch.zeros(size, dtype=torch.bool)
        word_ok = torch.zeros(size, dtype=torch.bool)
        leading_space = torch.zeros(size, dtype=torch.bool)
        lengths = torch.zeros(size, dtype=torch.long)
        text_piece, word_piece = FreeText(10**6), FreeText(10**6, word=True)
        for token_id in range(min(size, len(tokenizer))):
            text = tokenizer.decode([token_id], clean_up_tokenization_spaces=False)
            if token_id in excluded or not text or "\ufffd" in text:
                self.texts.append(None)
                continue
            self.texts.append(text)
            node = self.trie
            for ch in text:
                node = node.setdefault(ch, {})
            node.setdefault(END, []).append(token_id)
            lengths[token_id] = len(text)
            text_ok[token_id] = all(text_piece.allows(ch, 1) for ch in text)
            word_ok[token_id] = all(word_piece.allows(ch, 1) for ch in text)
            leading_space[token_id] = text[0].isspace()
        self.texts += [None] * (size - len(self.texts))
        self.text_ok, self.word_ok, self.leading_space, self.lengths = text_ok, word_ok, leading_space, lengths

    def free_mask(self, piece: FreeText, count: int):
        """Tokens that are pure free text and fit in the characters left."""
        mask = (self.word_ok if piece.word else self.text_ok) & (self.lengths <= piece.max_chars - count)
        if count == 0:
            mask = mask & ~self.leading_space
        return mask


def vocab_for(tokenizer, size: int) -> Vocab:
    key = (id(tokenizer), size)
    if key not in _VOCABS:
        _VOCABS[key] = Vocab(tokenizer, size)
    return _VOCABS[key]


class Guide:
    """The grammar state of one reply being decoded."""

    def __init__(self, grammar: ReplyGrammar, vocab: Vocab, prefix: str = ""):
        self.grammar = grammar
        self.vocab = vocab
        self.text = prefix
        self.state = grammar.advance(grammar.start(), prefix)
        self.tokens = 0                # generated so far
        self.reasoning_tokens = 0      # of them, inside a reasoning piece (think=N)

    @property
    def finished(self) -> bool:
        return self.grammar.finished(self.state)

    def _walk(self) -> list:
        """Token ids made only of grammar text that is not free text (literals, numbers, the
        quote that closes a free-text field): a walk of the vocabulary trie driven by the
        characters the grammar allows next (a handful), never by the whole vocabulary."""
        grammar = self.grammar
        ids: list = []
        stack = [(self.vocab.trie, self.state)]
        while stack:
            node, state = stack.pop()
            for ch in grammar.next_chars(state):
                child = node.get(ch)
                if child is None:
                    continue
                nxt = grammar.step(state, ch)
                if not nxt:
                    continue
                ids.extend(child.get(END, ()))
                stack.append((child, nxt))
        return ids

    def allowed(self, size: int, close: bool = False):
        """A boolean mask over the vocabulary (``close``: free text must end now)."""
        import torch
        free = self.grammar.free_text(self.state)
        if free is not None and free[0].max_tokens and self.reasoning_tokens >= free[0].max_tokens:
            close = True               # the thinking budget is spent: on to the action
        if free is not None and (not close or free[1] == 0):   # free text needs one character
            mask = self.vocab.free_mask(*free).clone()
        else:
            mask = torch.zeros(size, dtype=torch.bool)
        ids = self._walk()
        if ids:
            mask[torch.tensor(ids, dtype=torch.long)] = True
        return mask

    def advance(self, token_id: int) -> None:
        self.tokens += 1
        text = self.vocab.texts[token_id] or ""
        self.text += text
        self.state = self.grammar.advance(self.state, text)
        if self.grammar.action is not None:      # a think-then-act grammar: count the reasoning
            free = self.grammar.free_text(self.state)     # (the token that closes it is not)
            self.reasoning_tokens += bool(free is not None and free[0].max_tokens)

    def completion(self) -> str:
        return self.grammar.completion(self.state)

    def determined_rest(self):
        """The rest of the reply if only one remains, else None (see ReplyGrammar)."""
        return self.grammar.determined_rest(self.state)


def word_boundary(text: str) -> str:
    """``text`` cut after its last non-word character, so that what follows it starts on a
    natural token boundary (``{"action_type": "`` rather than ``{"action_type": "co``)."""
    cut = len(text)
    while cut and (text[cut - 1].isalnum() or text[cut - 1] == "_"):
        cut -= 1
    return text[:cut]


def forced_prefix(grammar: ReplyGrammar) -> str:
    """The text every legal reply starts with, cut at a word boundary."""
    return word_boundary(grammar.forced_prefix())


def common_prefix(texts: list) -> str:
    """The longest common prefix of the strings, cut at a word boundary."""
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return word_boundary(first[:n])
