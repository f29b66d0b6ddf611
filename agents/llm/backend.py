"""What every backend takes and returns: a :class:`Completion` in, a :class:`Reply` (or the
exception that prevented it) out, in order. Backends also expose ``kind``, ``model_name``,
``fits(messages) -> bool`` (context budget) and ``release(key)`` (forget a seat's cache)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Completion:
    """One generation request: the seat (cache identity), the chat messages, a sampling seed."""

    key: tuple
    messages: list
    sample_seed: int = 0


@dataclass
class Reply:
    text: str
    usage: dict = field(default_factory=dict)
