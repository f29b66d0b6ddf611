"""Parroting (paper Appendix M.4): how much public talk repeats what was just said.

* ``consecutive_jaccard``: Jaccard overlap of the word 5-gram sets of consecutive public
  utterances of one episode (any two speakers), averaged; pairs where neither utterance has a
  5-gram are skipped.
* ``copy_share``: the share of utterances whose word set overlaps (Jaccard) more than 0.55 with
  an earlier utterance of a different speaker in the same episode.

Utterances are the public messages sent by players (moderator lines are not talk). A game
without a talk phase (Prisoner's Dilemma) has no utterances: its metrics are None.
"""
from __future__ import annotations

import re
from typing import Iterable, Optional

COPY_THRESHOLD = 0.55
NGRAM = 5


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def ngrams(tokens: list[str], n: int = NGRAM) -> set:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def jaccard(a: set, b: set) -> Optional[float]:
    union = a | b
    return len(a & b) / len(union) if union else None


def utterances(record: dict) -> list[tuple[str, str]]:
    """(speaker, text) of every public player message, in order."""
    return [(m["sender"], m.get("text", "")) for m in record.get("messages", [])
            if m.get("sender") is not None and m.get("visibility") == "public" and m.get("text")]


def episode_parroting(record: dict) -> dict:
    said = utterances(record)
    grams = [ngrams(words(text)) for _, text in said]
    pairs = [j for j in (jaccard(a, b) for a, b in zip(grams, grams[1:])) if j is not None]
    bags = [set(words(text)) for _, text in said]
    copies = 0
    for i, (speaker, _) in enumerate(said):
        if any(said[j][0] != speaker and (jaccard(bags[i], bags[j]) or 0) > COPY_THRESHOLD for j in range(i)):
            copies += 1
    return {"utterances": len(said), "pairs": len(pairs), "jaccard_sum": sum(pairs), "copies": copies}


def parroting(records: Iterable[dict]) -> dict:
    """Pooled over episodes: mean consecutive 5-gram Jaccard and copy share (None without talk)."""
    total = {"episodes": 0, "utterances": 0, "pairs": 0, "jaccard_sum": 0.0, "copies": 0}
    for record in records:
        if record.get("failed"):
            continue
        one = episode_parroting(record)
        total["episodes"] += 1
        for key in ("utterances", "pairs", "jaccard_sum", "copies"):
            total[key] += one[key]
    return {"episodes": total["episodes"], "utterances": total["utterances"],
            "consecutive_jaccard": total["jaccard_sum"] / total["pairs"] if total["pairs"] else None,
            "copy_share": total["copies"] / total["utterances"] if total["utterances"] else None}
