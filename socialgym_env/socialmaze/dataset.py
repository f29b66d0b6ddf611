"""Data sets of certified Hidden Role Deduction instances, stored as JSONL.

Instance ``i`` of a data set built with ``seed`` uses its own seed derived from
``(seed, i)`` through ``numpy.random.SeedSequence``, so any row can be regenerated
alone and the file is byte-identical for the same arguments. One JSON object per
line, fields as in :meth:`MazeInstance.to_dict`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..atomic import atomic_file
from .generator import DEFAULT_MAX_ATTEMPTS, GenerationStats, generate_instance
from .instance import MazeConfig, MazeInstance


def derive_seed(seed: int, index: int) -> int:
    """A 63-bit seed for row ``index``; independent streams per row (SeedSequence)."""
    state = np.random.SeedSequence([seed, index]).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


def iter_dataset(
    n: int,
    seed: int,
    config: MazeConfig,
    *,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    stats: GenerationStats | None = None,
) -> Iterator[MazeInstance]:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    for i in range(n):
        yield generate_instance(
            config,
            derive_seed(seed, i),
            instance_id=f"hrd-{config.preset}-{config.variant}-s{seed}-{i:06d}",
            max_attempts=max_attempts,
            stats=stats,
        )


def generate_dataset(n: int, seed: int, config: MazeConfig, **kwargs) -> list[MazeInstance]:
    return list(iter_dataset(n, seed, config, **kwargs))


def write_jsonl(instances: Iterable[MazeInstance], path: str | os.PathLike[str]) -> int:
    """Write one instance per line; the file appears only when complete. Returns the count."""
    count = 0
    with atomic_file(path, "w") as fh:      # the shared writer: whole or absent, never a device replaced
        for inst in instances:
            fh.write(json.dumps(inst.to_dict(), ensure_ascii=False, sort_keys=False) + "\n")
            count += 1
    return count


def read_jsonl(path: str | os.PathLike[str]) -> list[MazeInstance]:
    return read_rows(path, MazeInstance.from_dict, "a SocialMaze data set (JSONL from socialgym maze generate)")


def read_rows(path, from_dict: Callable[[dict], Any], what: str) -> list:
    """``from_dict`` of every JSON line of ``path``. Whatever is not ``what`` -- binary bytes, a
    truncated line, another format's rows, a missing or mistyped field -- is one ValueError
    naming the file, the line and what was expected."""
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValueError(f"a row is a JSON object, got {type(row).__name__}")
                    out.append(from_dict(row))
                except KeyError as exc:
                    raise ValueError(f"{path}:{lineno} is not {what}: missing field {exc}") from exc
                except (ValueError, TypeError, AttributeError, IndexError, RecursionError) as exc:
                    raise ValueError(f"{path}:{lineno} is not {what}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not {what}: not UTF-8 text (a binary file?)") from exc
    return out

