"""JSONL episode logs: one episode per line, schema-versioned, appended atomically.

A killed run loses at most the episode in flight: each record is written with a single
``write`` of one complete line under an exclusive lock, then flushed and fsynced. Readers skip
(or reject, if asked) a truncated or corrupt line and say which line it was.
"""
from __future__ import annotations

import fcntl
import json
import os
import warnings
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from .actions import encodable
from .record import LOG_SCHEMA
from .errors import LogFormatError

REQUIRED_KEYS = ("schema", "episode_id", "game", "seed", "roster", "turns", "scores", "rewards")
PathLike = Union[str, os.PathLike]


def encode_line(record: dict) -> bytes:
    """One record as a UTF-8 JSON line. Text that UTF-8 cannot encode (a lone surrogate in a model
    reply, an action or a name) becomes U+FFFD, so one such string never aborts a run or makes
    a resume fail on the same episode forever."""
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    return encodable(line).encode("utf-8")


def append_episode(path: PathLike, record: dict) -> None:
    """Append one episode record as one line."""
    data = encode_line(record)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # A previous run killed mid-write may have left a partial line: start on a fresh one.
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def validate_record(record) -> None:
    if not isinstance(record, dict):
        raise LogFormatError("an episode record must be a JSON object")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise LogFormatError(f"episode record lacks {missing}")
    if record["schema"] != LOG_SCHEMA:
        raise LogFormatError(f"unknown log schema {record['schema']!r} (this version reads {LOG_SCHEMA!r})")


def read_episodes(path: PathLike, strict: bool = False,
                  on_skip: Optional[Callable[[str, str], None]] = None) -> Iterator[dict]:
    """Yield the valid episode records of a JSONL log. A corrupt, truncated or foreign line
    raises LogFormatError when ``strict``; else it is skipped: ``on_skip(message, why)`` is
    called if given (``why`` is a short category such as "not JSON"), otherwise a warning
    names the line."""
    with open(path, "r", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                validate_record(record)
            except LogFormatError as err:
                why, detail = _skip_category(err), err
            except (ValueError, RecursionError) as err:    # bad JSON, huge numbers, deep nesting
                why, detail = "not JSON (corrupt or truncated)", err
            else:
                yield record
                continue
            message = f"{path}:{number}: skipped a bad episode line ({str(detail)[:200]})"
            if strict:
                raise LogFormatError(message) from None
            if on_skip is not None:
                on_skip(message, why)
            else:
                warnings.warn(message, stacklevel=2)


def _skip_category(err: LogFormatError) -> str:
    text = str(err)
    if "lacks" in text or "JSON object" in text:
        return "not an episode record"
    if "schema" in text:
        return "another log schema"
    return "invalid record"


def completed_episode_ids(path: PathLike, retry_failed: bool = True) -> set[str]:
    """Episode ids already in the log (for resuming a killed run). With ``retry_failed`` (the
    default) an episode logged only as failed (a server down, a policy crash) does not count,
    so a resume plays it again; its failure record stays in the log for the audit trail."""
    if not Path(path).exists():
        return set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {r["episode_id"] for r in read_episodes(path) if not (retry_failed and r.get("failed"))}


def failed_episode_ids(path: PathLike) -> set[str]:
    """Episode ids whose only records in the log are failures."""
    if not Path(path).exists():
        return set()
    failed, done = set(), set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for record in read_episodes(path):
            (failed if record.get("failed") else done).add(record["episode_id"])
    return failed - done


def iter_log_dir(path: PathLike, strict: bool = False,
                 on_skip: Optional[Callable[[str, str], None]] = None) -> Iterator[dict]:
    """Every episode of a log file, or of every ``*.jsonl`` file under a folder (sorted)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no log file or folder at {path}")
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    for file in files:
        yield from read_episodes(file, strict=strict, on_skip=on_skip)


# ---------------------------------------------------------------------- deterministic replay
def restore_env(game: str, config, seed: int, episode_id: str, prefix_actions):
    """The env of a logged episode after the given raw actions: made with the episode's config,
    reset with its seed and id, then stepped (seats that are out are skipped as the runner does).
    The engine is deterministic, so this is exactly the state the next seat saw. ``config`` may
    be the JSON string of an export row."""
    from .registry import make
    if isinstance(config, str):
        config = json.loads(config)
    env = make(game, **(config or {}))
    env.reset(seed=seed, options={"episode_id": episode_id})
    for action in prefix_actions:
        env.skip_dead()
        env.step(action)
    env.skip_dead()
    return env


def replay_observations(record: dict) -> list:
    """The observation text each logged turn's seat had when it acted, rebuilt by replaying the
    episode from its seed and raw actions. Logs keep observations only with the engine option
    ``log_observations=true`` (they repeat the whole history every turn); this is how the rest
    get them back. Raises LogFormatError if the replay departs from the log."""
    env = restore_env(record["game"], record.get("config"), record["seed"], record["episode_id"], ())
    observations = []
    for number, turn in enumerate(record["turns"]):
        if env.agent_selection != turn["agent"]:
            raise LogFormatError(f"episode {record['episode_id']}: turn {number} was {turn['agent']}'s in the log "
                                 f"but {env.agent_selection}'s on replay (another engine version or config?)")
        observations.append(env.observation_text(turn["agent"]))
        env.step(turn["raw"])
        env.skip_dead()
    return observations
