"""What every backend takes and returns: a :class:`Completion` in, a :class:`Reply` (or the
exception that prevented it) out, in order. Backends also expose ``kind``, ``model_name``,
``fits(messages) -> bool`` (context budget) and ``release(key)`` (forget a seat's cache).
Local backends may also offer ``score(completions, candidates)`` (log-probability of each
candidate reply) for the scoring mode."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Completion:
    """One generation request: the seat (cache identity), the chat messages, a sampling seed."""

    key: tuple
    messages: list
    sample_seed: int = 0
    # Constrained replies: the grammar of legal replies (local backends decode under it) and
    # its JSON schema (servers get it as ``response_format``). None: free generation.
    grammar: Optional[object] = None
    schema: Optional[dict] = None


@dataclass
class Reply:
    text: str
    usage: dict = field(default_factory=dict)
    # What a server sent on its reasoning channel (``reasoning_content``), apart from the text.
    reasoning: str = ""
