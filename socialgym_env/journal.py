"""The turn journal: the decisions of episodes still in play, so a killed run resumes them where
they were instead of from their first turn.

A log (``<game>.jsonl``) holds finished episodes only. Beside it, ``<game>.journal`` (JSON lines,
not ``*.jsonl``, so nothing that reads a log folder takes it for episodes) gets, once per tick of
the batched runner, one line per live episode with the decisions that tick applied to it::

    {"episode_id": ..., "job": <fingerprint>, "turn": 4, "after": 5,
     "decisions": [{"agent": ..., "action": ..., "meta": {...}, "reply": ..., "seconds": ..., "batch": ...}]}

``turn`` is the episode's turn count before the decisions and ``after`` the count after them, so a
replay checks that each line continues the one before. When the episode's record reaches the log
an ``{"episode_id": ..., "end": true}`` line retires its lines. Lines are written with
:func:`socialgym_env.atomic.append_records` (one write under a lock, fsync): a kill at any moment
leaves whole lines plus at most one torn last line, which :func:`read_journal` skips. The journal
is replayed by :mod:`socialgym_agents.batched`; it never enters a log record, so wall times kept
in it (``seconds``) cannot break the byte-for-byte determinism of the logs.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional, Union

from .atomic import append_records, atomic_write_bytes

PathLike = Union[str, "os.PathLike[str]"]
JOURNAL_SUFFIX = ".journal"


def journal_path(log_path: PathLike) -> Path:
    """``logs/coup.jsonl`` -> ``logs/coup.journal``."""
    return Path(log_path).with_suffix(JOURNAL_SUFFIX)


def job_fingerprint(game: str, seed: int, config: dict, seats, playbooks: Optional[dict] = None) -> str:
    """What a journal line must match to be replayed into a job: another config, roster or
    playbook under the same episode id (a changed preset) starts the episode afresh."""
    text = json.dumps([game, seed, config, list(seats), playbooks or {}], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def encode_lines(entries) -> bytes:
    # ASCII escapes keep every string exact, a lone surrogate included (the replay must
    # annotate each turn with exactly what the unbroken run did).
    return b"".join(json.dumps(entry, sort_keys=True, default=repr).encode("ascii") + b"\n" for entry in entries)


def append_journal(path: PathLike, entries) -> None:
    """Append journal lines (dicts) with one atomic write; nothing for an empty list."""
    if entries:
        append_records(path, encode_lines(entries))


def read_journal(path: PathLike) -> dict:
    """``{episode_id: [line, ...]}`` for the episodes whose journal is not retired by an ``end``
    line, each list a chain of lines that continue one another from turn 0. A torn or corrupt
    line is skipped; a line that does not continue the chain (a run that started the episode
    again from turn 0) replaces the lines from its turn on."""
    chains: dict = {}
    path = Path(path)
    if not path.exists():
        return chains
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(entry, dict) or not isinstance(entry.get("episode_id"), str):
                continue
            episode = entry["episode_id"]
            if entry.get("end"):
                chains.pop(episode, None)
                continue
            if not isinstance(entry.get("turn"), int) or not isinstance(entry.get("decisions"), list):
                continue
            chain = chains.setdefault(episode, [])
            while chain and chain[-1]["after"] > entry["turn"]:
                chain.pop()
            if (chain[-1]["after"] if chain else 0) == entry["turn"]:
                chain.append(entry)
    return chains


def compact_journal(path: PathLike, keep) -> dict:
    """Rewrite the journal atomically with only the chains of the episode ids in ``keep`` (the
    ones still to play); remove it when none is left. Returns the kept chains."""
    path = Path(path)
    chains = {episode: chain for episode, chain in read_journal(path).items() if episode in keep}
    if chains:
        atomic_write_bytes(path, encode_lines(line for chain in chains.values() for line in chain))
    elif path.exists():
        path.unlink()
    return chains


# ---------------------------------------------------------------------- decision times
TIMING_SUFFIX = ".timing"


def timing_path(log_path: PathLike) -> Path:
    """``logs/coup.jsonl`` -> ``logs/coup.timing``: each finished episode's decision times, kept
    out of the record so that its bytes stay a function of the seed."""
    return Path(log_path).with_suffix(TIMING_SUFFIX)


def append_timing(path: PathLike, episode_id: str, timing) -> None:
    """One line ``{"episode_id": ..., "timing": [[turn, seconds, batch], ...]}``: ``seconds`` is
    the wall time of the policy call that made the turn's decision (for a batched call, the whole
    batch's, shared by its ``batch`` decisions)."""
    append_records(path, encode_lines([{"episode_id": episode_id, "timing": list(timing)}]))


def read_timing(folder: PathLike) -> dict:
    """``{episode_id: {turn: (seconds, batch)}}`` from every ``*.timing`` file under ``folder``
    (a log file's folder when given a file); torn or foreign lines are skipped, a later line of
    an episode replaces an earlier one (a failed episode played again)."""
    folder = Path(folder)
    files = sorted(folder.rglob(f"*{TIMING_SUFFIX}")) if folder.is_dir() else [timing_path(folder)]
    out: dict = {}
    for path in files:
        if not path.is_file():         # absent, or a pipe or device that would block or never end
            continue
        with open(path, "rb") as handle:
            for raw in handle:
                try:
                    entry = json.loads(raw)
                    out[entry["episode_id"]] = {int(turn): (float(seconds), int(batch))
                                                for turn, seconds, batch in entry["timing"] if seconds is not None}
                except (ValueError, KeyError, TypeError):
                    continue
    return out
