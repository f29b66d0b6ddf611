"""Text safety for everything an agent or a model sends that reaches a log, a message or a
record: lone surrogates replaced, long texts clipped, any object described without raising, and
the folded form names and keywords are matched in."""
from __future__ import annotations

import re
import reprlib
import unicodedata

# Free texts that go to logs and messages besides the action itself (invalid-action reasons,
# model replies' parse errors, backend errors, failure reasons) are clipped to this many characters.
MAX_LOG_TEXT_CHARS = 1000


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with every lone surrogate (which UTF-8 cannot encode) replaced by U+FFFD, so a
    model reply or action carrying one never breaks a transcript, a print or a log line."""
    return _LONE_SURROGATE.sub("\ufffd", text)


_PLAIN_SCALARS = frozenset((int, float, bool, type(None)))


def encodable_data(value):
    """``value`` (JSON-like data: dicts, lists, tuples, strings, numbers) with every string,
    keys included, passed through :func:`encodable`. For what callers attach to records
    (policy names, model prompts and replies). Data without a lone surrogate come back as the
    very same object (no copy: a caller may still hold and extend it); only containers on the
    way to a replaced string are rebuilt."""
    if isinstance(value, str):
        return encodable(value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        # the usual case, a flat dict of ASCII keys and scalars (a config): nothing to replace
        for key, item in value.items():
            if key.__class__ is not str or not key.isascii():
                break
            kind = item.__class__
            if kind is str:
                if not item.isascii():
                    break
            elif kind not in _PLAIN_SCALARS:
                break
        else:
            return value
        items = [(encodable_data(k), encodable_data(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        items = [encodable_data(v) for v in value]
        if all(v is v0 for v, v0 in zip(items, value)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


class _BoundedRepr(reprlib.Repr):
    """``reprlib`` limits (long strings, big or deep containers cut with "...") plus integers
    too long for ``repr`` (Python refuses more than 4,300 digits) described by their size."""

    def __init__(self):
        super().__init__()
        self.maxstring = self.maxother = 80
        self.maxlong = 40

    def repr_int(self, value, level):
        if value.bit_length() > 128:
            return f"<int of about {int(value.bit_length() * 0.30103) + 1} digits>"
        return super().repr_int(value, level)

    def repr_bytes(self, value, level):
        return repr(value[:self.maxstring]) + ("..." if len(value) > self.maxstring else "")

    def repr_bytearray(self, value, level):
        return f"bytearray({self.repr_bytes(bytes(value[:self.maxstring + 1]), level)})"


_BOUNDED_REPR = _BoundedRepr()


def safe_repr(value, limit: int = 200) -> str:
    """A short ``repr`` of any object that never raises: bounded for huge ints, long strings,
    bytes and deep or big containers, a placeholder when the object's own ``__repr__`` fails,
    lone surrogates replaced. For messages and logs that name what a caller passed."""
    try:
        text = _BOUNDED_REPR.repr(value)
    except Exception:            # a __repr__ that raises, or anything reprlib cannot bound
        text = f"<{type(value).__name__} object>"
    return clip(encodable(text), limit)


def clip(text: str, limit: int = MAX_LOG_TEXT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, saying how much was cut, so one huge reply
    or error message cannot blow up a log line or a printed message."""
    if len(text) <= limit:
        return text
    marker = f"... [{len(text) - limit} more characters cut]"
    return text[:max(0, limit - len(marker))] + marker


def fold(text: str) -> str:
    """The form names and keywords are matched in (the shared rules in ``socialgym_env.games``): NFC, then case folding,
    so a decomposed "Björn" (o + combining diaeresis) is the composed "Björn"."""
    if text.isascii():
        return text.lower()         # ASCII is its own NFC form, and folds as it lowers
    return unicodedata.normalize("NFC", text).casefold()
