"""Untrusted text (policy, player and game names read from logs) in the Markdown the benchmarks
write: leaderboard.md, the SPaRTan reports. A name is shown as the text it is, never as markup:
rendered by MkDocs (Python-Markdown) or any CommonMark reader, ``<img src=x onerror=...>`` stays
text, ``[x](javascript:...)`` no link, a backtick no code span, a pipe no column.

Only characters both Python-Markdown and CommonMark accept escaped are backslash-escaped; ``&``,
``<`` and ``>`` become entities, which both read back as the character. HTML pages escape with
:func:`html.escape` instead.
"""
from __future__ import annotations

import re

_INLINE = re.compile(r"([\\`*\[\]|])")                   # code, emphasis, links and images, table cells
# An underscore inside a word never emphasises (both readers): prisoners_dilemma stays as written.
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_LINE_START = re.compile(r"(?m)^([ \t]*)([#+\-])")        # a heading or a list item, if a line began so
_NUMBERED = re.compile(r"(?m)^([ \t]*\d+)([.)])")         # an ordered list item


def md_text(value) -> str:
    """``value`` as Markdown text that renders as exactly that text (line breaks kept)."""
    text = _UNDERSCORE.sub(r"\\_", _INLINE.sub(r"\\\1", str(value)))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _NUMBERED.sub(r"\1\\\2", _LINE_START.sub(r"\1\\\2", text))


def md_cell(value) -> str:
    """``value`` as one Markdown table cell: :func:`md_text` on one line."""
    return md_text(str(value).replace("\r", " ").replace("\n", " "))
