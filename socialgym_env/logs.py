"""JSONL episode logs: one episode per line, schema-versioned, appended atomically.

A killed run loses at most the episode in flight: each record is written with a single
``write`` of one complete line under an exclusive lock, then flushed and fsynced. Readers skip
(or reject, if asked) a truncated or corrupt line and say which line it was.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import warnings
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from .actions import encodable, safe_repr
from .atomic import append_records, kind_of
from .record import LOG_SCHEMA
from .errors import InvalidActionError, LogFormatError

PathLike = Union[str, os.PathLike]


class NotRegularLogError(LogFormatError):
    """A log path that is a device, a pipe, a socket or a folder (anything but a regular file)."""


REQUIRED_KEYS = ("schema", "episode_id", "game", "seed", "roster", "turns", "scores", "rewards")

# The type of every record field a later stage reads (leaderboards, replays, exports, the
# detectors); a field may be absent unless in REQUIRED_KEYS, but present it has this type.
# (A tuple of types is "one of"; None in it allows null.)
_NUMBER = (int, float)
RECORD_FIELDS = {
    "schema": str, "episode_id": str, "game": str, "game_version": int, "seed": int,
    "config": (dict, None), "roster": list, "turns": list, "messages": list, "transcript": list,
    "steps": int, "finished": bool, "scores": (dict, None), "rewards": (dict, None),
    "outcomes": (dict, None), "winners": list, "reason": (str, None), "truncated": bool,
    "invalid_actions": dict, "metrics": (dict, None), "failed": bool, "error": str, "traceback": str,
    "tags": (dict, None),
}
SEAT_FIELDS = {"agent": str, "name": (str, None), "role": (str, None), "team": (str, None),
               "policy": (str, None), "playbook": (str, None), "playbook_id": (str, None),
               "alive_at_end": bool}
TURN_FIELDS = {"agent": str, "raw": str, "action": (str, None), "valid": bool, "step": int, "round": int,
               "phase": str, "reason": str, "fallback": bool, "observation": str, "agent_meta": (dict, None)}


def _type_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true/false", dict: "an object",
             list: "a list", None: "null"}
    return " or ".join(names[k] for k in kinds)


def _compiled(fields: dict) -> dict:
    """field -> (the types it may have, null allowed, true/false allowed): what the checks
    below test without building anything per value (a log holds ~1,000 turns per episode)."""
    out = {}
    for key, kind in fields.items():
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out[key] = (tuple(k for k in kinds if k is not None), None in kinds, bool in kinds, kind)
    return out


_RECORD, _SEAT, _TURN = _compiled(RECORD_FIELDS), _compiled(SEAT_FIELDS), _compiled(TURN_FIELDS)


def _has_type(value, kind) -> bool:
    types, nullable, boolean, _ = kind
    if value is None:
        return nullable
    if value.__class__ is bool:               # JSON true/false is not a number here
        return boolean
    return isinstance(value, types)


def _check_fields(obj: dict, fields: dict, where: str = "", required=()) -> None:
    """``fields``: a ``_compiled`` table; ``where``: the object's path ("" for the record, "turns[3]")."""
    for key in required:
        if key not in obj:
            raise LogFormatError(f"{where} lacks {key!r}")
    for key, value in obj.items():
        kind = fields.get(key)
        if kind is not None and not _has_type(value, kind):
            name = f"{where}.{key}" if where else key
            raise LogFormatError(f"{name} must be {_type_name(kind[3])}, got {_json_type(value)}")


def _json_type(value) -> str:
    return "null" if value is None else {bool: "true/false", int: "an integer", float: "a number", str: "a string",
                                         dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def _check_numbers(table: dict, name: str) -> None:
    for seat, value in table.items():
        if value.__class__ is bool or not isinstance(value, _NUMBER) or not math.isfinite(value):
            raise LogFormatError(f"{name}[{seat!r}] must be a finite number, got {_json_type(value)}")


def validate_record(record) -> None:
    """Raise LogFormatError, naming the field and what was expected, unless ``record`` is an
    episode record every later stage can read: the required keys, the schema, and the type
    of every field the project reads (top level, each roster seat, each turn; scores and
    rewards finite numbers by seat)."""
    if not isinstance(record, dict):
        raise LogFormatError(f"an episode record must be a JSON object, got {_json_type(record)}")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise LogFormatError(f"episode record lacks {missing}")
    if record["schema"] != LOG_SCHEMA:
        raise LogFormatError(f"unknown log schema {safe_repr(record['schema'], 80)} (this version reads {LOG_SCHEMA!r})")
    _check_fields(record, _RECORD)
    for index, seat in enumerate(record["roster"]):
        if not isinstance(seat, dict):
            raise LogFormatError(f"roster[{index}] must be an object, got {_json_type(seat)}")
        _check_fields(seat, _SEAT, f"roster[{index}]", required=("agent",))
    for index, turn in enumerate(record["turns"]):
        if not isinstance(turn, dict):
            raise LogFormatError(f"turns[{index}] must be an object, got {_json_type(turn)}")
        _check_fields(turn, _TURN, f"turns[{index}]", required=("agent", "raw"))
    for name in ("messages", "transcript", "winners"):
        item_type = dict if name == "messages" else str
        items = record.get(name) or ()
        if not all(item.__class__ is item_type for item in items):
            index = next(i for i, item in enumerate(items) if item.__class__ is not item_type)
            raise LogFormatError(f"{name}[{index}] must be {_type_name(item_type)}, got {_json_type(items[index])}")
    for name in ("scores", "rewards"):
        if record.get(name) is not None:
            _check_numbers(record[name], name)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_line(line: str) -> dict:
    """One log line as a checked record: strict JSON (no NaN/Infinity) that passes
    :func:`validate_record`. Raises LogFormatError or ValueError (not JSON)."""
    record = json.loads(line, parse_constant=_reject_constant)
    validate_record(record)
    return record


def _bad_value(value, path: str = "record"):
    """(path, why) of the first value JSON cannot hold (NaN, an infinity, a non-JSON type), or None."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where, f"{item} (JSON has no NaN or infinity)"
        if isinstance(item, dict):
            stack.extend((f"{where}[{k!r}]", v) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
        elif not isinstance(item, (str, int, float, type(None))):
            return where, f"a {type(item).__name__}, not JSON data"
    return None


def encode_line(record: dict) -> bytes:
    """One record as a UTF-8 JSON line. Text that UTF-8 cannot encode (a lone surrogate in a model
    reply, an action or a name) becomes U+FFFD, so one such string never aborts a run or makes
    a resume fail on the same episode forever. NaN, infinities and non-JSON objects are refused
    (LogFormatError naming the field): the line would not be JSON, or not read back the same."""
    try:
        line = json.dumps(record, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as err:
        found = _bad_value(record)
        where = f"{found[0]} is {found[1]}" if found else str(err)[:200]
        raise LogFormatError(f"episode {safe_repr(record.get('episode_id'), 80)} cannot be logged: {where}") from None
    return encodable(line).encode("utf-8")


def append_episode(path: PathLike, record: dict) -> None:
    """Append one episode record as one line. The record is checked first (:func:`validate_record`,
    and JSON without NaN): a record its readers would reject raises LogFormatError and nothing is
    written."""
    validate_record(record)
    append_records(path, encode_line(record))


def open_log(path: PathLike):
    """``path`` opened as UTF-8 text (undecodable bytes replaced), or :class:`NotRegularLogError`
    when it is anything but a regular file: a device (``/dev/zero`` never ends, so reading it
    grows memory until failure) or a named pipe (opening one blocks until a writer comes). The
    open itself does not block (``O_NONBLOCK``), and the check is on what was opened."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularLogError(f"{safe_repr(os.fsdecode(path), 200)[1:-1]} is {kind_of(mode)}, not a regular "
                                 f"file: not read as a log")
    return os.fdopen(fd, "r", encoding="utf-8", errors="replace")


def _numbered_records(path: PathLike, strict: bool, on_skip) -> Iterator[tuple[int, str, dict]]:
    """(line number, line, record) of each valid record of one log file (see :func:`read_episodes`)."""
    with open_log(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = parse_line(line)
            except LogFormatError as err:
                why, detail = _skip_category(err), err
            except (ValueError, RecursionError) as err:    # bad JSON, huge numbers, deep nesting
                why, detail = "not JSON (corrupt or truncated)", err
            else:
                yield number, line, record
                continue
            if strict:
                raise LogFormatError(f"{path}:{number}: not a valid episode record: {str(detail)[:300]}") from None
            _note(on_skip, f"{path}:{number}: skipped a bad episode line ({str(detail)[:200]})", why)


def _note(on_skip, message: str, why: str) -> None:
    if on_skip is not None:
        on_skip(message, why)
    else:
        warnings.warn(message, stacklevel=3)


def read_episodes(path: PathLike, strict: bool = False,
                  on_skip: Optional[Callable[[str, str], None]] = None) -> Iterator[dict]:
    """Yield the valid episode records of a JSONL log (each checked by :func:`validate_record`:
    later stages never see a malformed one). A corrupt, truncated (a run killed mid-line),
    foreign or wrongly typed line raises LogFormatError naming ``file:line`` and what was
    expected when ``strict``; else it is skipped: ``on_skip(message, why)`` is called if given
    (``why`` is a short category such as "not JSON"), otherwise a warning names the line.
    A path that is not a regular file (a device, a pipe) raises :class:`NotRegularLogError`.
    Every record of the file, duplicates included (a resume's audit trail reads them all);
    readers that count episodes use :func:`iter_log_dir`, which keeps one copy of each."""
    for _, _, record in _numbered_records(path, strict, on_skip):
        yield record


def _skip_category(err: LogFormatError) -> str:
    text = str(err)
    if text.startswith("episode record lacks") or text.startswith("an episode record must be"):
        return "not an episode record"
    if "log schema" in text:
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


SKIPPED_DUPLICATES = "duplicate episodes"      # the ``why`` of on_skip's one line on dropped duplicates
SKIPPED_NOT_REGULAR = "not a regular file"      # ... and of a pipe or device skipped inside a folder


class EpisodeLogs:
    """Every episode of some log files or folders (``*.jsonl`` under a folder, sorted), each
    episode once: what :func:`iter_log_dir` returns, the one place every reader that counts
    episodes (leaderboard, ratings, exports, studies) reads logs through.

    - **Duplicates.** The same episode in two files (a copied log, a folder holding a run and
      its backup) would count twice and narrow every interval. A successful record whose id was
      already read with the same content is dropped (told by a digest of the line, the logger
      writing sorted keys; lines that differ are parsed and compared before being called a conflict); after the last record one line says how many (``on_skip(message,
      SKIPPED_DUPLICATES)``, else a warning), and :attr:`duplicates` holds the count. The same
      id with *other* content is no copy but a conflict: LogFormatError naming both
      ``file:line``. Failure records are an audit trail (a resume plays a failed episode again
      under its id), so they never conflict with a success; only exact copies of them are dropped.
    - **Files that never end.** A device or a named pipe named directly raises
      :class:`NotRegularLogError`; one found inside a folder is skipped with one line
      (``on_skip(message, SKIPPED_NOT_REGULAR)``, else a warning).
    """

    def __init__(self, paths, strict: bool = False, on_skip: Optional[Callable[[str, str], None]] = None):
        self.paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        self.strict, self.on_skip = strict, on_skip
        self.duplicates = 0

    def _files(self, path: Path) -> Iterator[Path]:
        if not path.exists():
            raise FileNotFoundError(f"no log file or folder at {path}")
        if not path.is_dir():
            yield path                             # named directly: open_log refuses a pipe or device
            return
        for file in sorted(path.rglob("*.jsonl")):
            mode = file.stat().st_mode if file.exists() else 0
            if stat.S_ISREG(mode):
                yield file
            else:
                _note(self.on_skip, f"{file}: skipped, it is {kind_of(mode)}, not a regular file", SKIPPED_NOT_REGULAR)

    def __iter__(self) -> Iterator[dict]:
        self.duplicates = 0
        seen: dict = {}        # key -> (digest of the line, where it was read)
        for path in self.paths:
            for file in self._files(Path(path)):
                for number, line, record in _numbered_records(file, self.strict, self.on_skip):
                    if self._first_copy(seen, record, line, (file, number)):
                        yield record
        if self.duplicates:
            _note(self.on_skip, f"dropped {self.duplicates} duplicate episode record(s) (an episode id already "
                                f"read with the same content): each episode counted once", SKIPPED_DUPLICATES)

    def _first_copy(self, seen: dict, record: dict, line: str, where: tuple) -> bool:
        """Whether ``record`` (read at ``where``: file, line number) is the first copy of its
        episode (False: a copy, counted); LogFormatError when the same episode id was read
        before with other content."""
        digest = hashlib.blake2b(line.strip().encode("utf-8", "surrogatepass"), digest_size=16).digest()
        key = (record["episode_id"], digest) if record.get("failed") else record["episode_id"]
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = (digest, where)
            return True
        if earlier[0] != digest and _record_at(*earlier[1]) != record:
            raise LogFormatError(f"episode {safe_repr(record['episode_id'], 80)} is logged twice with different "
                                 f"content: {_place(earlier[1])} and {_place(where)} (two runs under one episode id? "
                                 f"keep one)")
        self.duplicates += 1
        return False


def _place(where: tuple) -> str:
    return f"{where[0]}:{where[1]}"


def _record_at(path: PathLike, number: int) -> Optional[dict]:
    """The record at line ``number`` of ``path`` (read again only when two copies' lines differ)."""
    with open_log(path) as handle:
        for index, line in enumerate(handle, start=1):
            if index == number:
                return parse_line(line)
    return None


def iter_log_dir(paths, strict: bool = False,
                 on_skip: Optional[Callable[[str, str], None]] = None) -> EpisodeLogs:
    """Every episode of a log file, or of every ``*.jsonl`` file under a folder (sorted), or of
    several of these (a list), each episode once: see :class:`EpisodeLogs`."""
    return EpisodeLogs(paths, strict=strict, on_skip=on_skip)


# ---------------------------------------------------------------------- deterministic replay
def restore_env(game: str, config, seed: int, episode_id: str, prefix_actions):
    """The env of a logged episode after the given raw actions: made with the episode's config,
    reset with its seed and id, then stepped (seats that are out are skipped as the runner does).
    The engine is deterministic, so this is exactly the state the next seat saw. ``config`` may
    be the JSON string of an export row. A game or config this install does not have, a bad
    seed, or an action that no longer replays raises LogFormatError naming the episode."""
    from .registry import make
    where = f"episode {safe_repr(episode_id, 80)}"
    try:
        if isinstance(config, str):
            config = json.loads(config)
        if not isinstance(config, (dict, type(None))):
            raise TypeError(f"config must be an object, got {type(config).__name__}")
        env = make(game, **(config or {}))
        env.reset(seed=seed, options={"episode_id": episode_id})
    except (KeyError, TypeError, ValueError) as err:       # UnknownGameError, ConfigError, bad JSON or seed
        raise LogFormatError(f"{where} cannot be replayed here: {err}") from None
    for number, action in enumerate(prefix_actions):
        env.skip_dead()
        if not env.agents:
            raise LogFormatError(f"{where}: the replay ended before action {number} (another engine version or config?)")
        try:
            env.step(action)
        except InvalidActionError as err:      # a config with invalid_action="raise"
            raise LogFormatError(f"{where}: action {number} does not replay: {err}") from None
    env.skip_dead()
    return env


def replay_observations(record: dict) -> list:
    """The observation text each logged turn's seat had when it acted, rebuilt by replaying the
    episode from its seed and raw actions. Logs keep observations only with the engine option
    ``log_observations=true`` (they repeat the whole history every turn); this is how the rest
    get them back. Raises LogFormatError if the record is malformed (:func:`validate_record`),
    names a game or config this install does not have, or the replay departs from the log."""
    validate_record(record)
    episode = safe_repr(record["episode_id"], 80)
    env = restore_env(record["game"], record.get("config"), record["seed"], record["episode_id"], ())
    observations = []
    for number, turn in enumerate(record["turns"]):
        if not env.agents or env.agent_selection != turn["agent"]:
            now = f"{env.agent_selection}'s" if env.agents else "after the end"
            raise LogFormatError(f"episode {episode}: turn {number} was {turn['agent']}'s in the log "
                                 f"but {now} on replay (another engine version or config?)")
        observations.append(env.observation_text(turn["agent"]))
        try:
            env.step(turn["raw"])
        except InvalidActionError as err:      # a config with invalid_action="raise"
            raise LogFormatError(f"episode {episode}: turn {number}'s action does not replay: {err}") from None
        env.skip_dead()
    check_replayed_result(env, record)
    return observations


def verify_replay(record: dict) -> None:
    """LogFormatError unless the record's actions, replayed from its seed and config, give its
    scores (a game or config this install refuses, an edited turn or score): what a stage that
    builds on a record's result (exports, replay pages) checks before any model is loaded."""
    validate_record(record)
    env = restore_env(record["game"], record.get("config"), record["seed"], record["episode_id"],
                      [turn["raw"] for turn in record["turns"]])
    check_replayed_result(env, record)


def check_replayed_result(env, record: dict) -> None:
    """LogFormatError when the replayed episode (``env`` after every logged turn) does not end
    with the record's scores: an edited log or another engine version, whose rows and pages
    would otherwise say one result while the record says another."""
    if "scores" not in record or env.machine.state is None:
        return
    replayed = env.episode_record()["scores"]
    if replayed != record["scores"]:
        episode = safe_repr(record.get("episode_id"), 80)
        raise LogFormatError(f"episode {episode}: the log's scores {safe_repr(record['scores'], 120)} are not "
                             f"what its actions give on replay ({safe_repr(replayed, 120)}): an edited log, or "
                             f"another engine version?")
