"""Atomic outputs: a file or a folder appears complete or not at all.

Every output of the project that is not an append-only log (exports, leaderboards, plots,
playbooks, training metrics, adapters' metadata) is written through one of these:

    atomic_write_text(path, text)          # or atomic_write_bytes / atomic_write_json
    with atomic_file(path, "w") as handle: # for writers that want a handle (csv, json.dump, torch.save)
        ...
    atomic_savefig(figure, path)           # a matplotlib figure
    with atomic_dir(folder) as tmp:        # a folder of files that belong together (an export)
        ...                                # write everything under tmp

The data go to a hidden temporary file in the destination's folder (same file system, so the
rename is atomic), are flushed and fsynced, then ``os.replace`` puts them in place. A process
killed at any moment leaves the old complete file (or none) or the new complete one, never a
part; at worst a hidden ``.NAME.<pid>-*.tmp`` file is left next to it, which the next write of
the same destination removes (only those of processes no longer running, so that two writers
never delete each other's). An exception inside the ``with`` block removes the temporary and
leaves the destination untouched.

Only regular files (and, for :func:`atomic_dir`, folders) are ever replaced: a destination that
exists as anything else (a device such as ``/dev/null``, a pipe, a socket, a symbolic link) is
refused with :class:`NotRegularFileError` before anything is written, since ``os.replace`` would
put a regular file where it was.

A folder cannot be replaced by one rename when it exists, so :func:`atomic_dir` moves the old
folder aside, renames the new one in, then deletes the old: a kill between the two renames
leaves the destination absent (the old copy under a hidden ``.NAME.*.old`` name), never
half-old, half-new; the next write of that destination removes it. Append-only outputs (episode logs, per-step CSVs) are not replaced but
grow by whole records: :func:`append_records` writes each batch of lines with one ``write``.
"""
from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import math
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator, Optional, Union

from .errors import SocialGymError

PathLike = Union[str, os.PathLike]

# The process's umask, read once (reading it means setting it, which is not thread-safe).
_UMASK = os.umask(0o022)
os.umask(_UMASK)

__all__ = ["NotRegularFileError", "append_csv_rows", "append_records", "atomic_dir", "atomic_file", "atomic_savefig",
           "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "drop_torn_tail", "finite_or_null",
           "kind_of", "refuse_non_regular"]


class NotRegularFileError(SocialGymError, FileExistsError):
    """An output path that exists as something a write must not replace (a device, a pipe, a
    socket, a symbolic link; a file where a folder goes)."""


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is, in words ("a device", "a pipe", ...)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a file" if stat.S_ISREG(mode) else "of an unknown kind"


def refuse_non_regular(path: PathLike, folder: bool = False) -> None:
    """Raise :class:`NotRegularFileError` when ``path`` exists as anything but a regular file
    (``folder=True``: anything but a folder). Nothing is raised for a path that does not exist."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
        return
    expected = "a folder" if folder else "a regular file"
    shown = os.fsdecode(path)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    raise NotRegularFileError(f"{shown} exists and is {kind_of(mode)}, not {expected}: it is not replaced; "
                              f"choose another output path")


def _temp_prefix(path: Path) -> str:
    # The writer's pid in the name lets a later write tell a dead writer's leftovers from a live one's.
    return f".{path.name}.{os.getpid()}-"


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True            # someone else's process, or not a pid we can check: leave its files
    return True


def _remove_leftovers(path: Path) -> None:
    """Remove the hidden temporaries (``.NAME.<pid>-*.tmp``, ``.NAME.<pid>-*.old``) that a
    writer of ``path`` killed mid-write left, when that writer is no longer running."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"(\d+)-[a-z0-9_]+\.(?:tmp|old)")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        match = pattern.fullmatch(name)
        if match is None or _pid_running(int(match.group(1))):
            continue
        leftover = path.parent / name
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                leftover.unlink()


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: PathLike, mode: str = "w", encoding: Optional[str] = "utf-8",
                newline: Optional[str] = None) -> Iterator[IO]:
    """A handle on a temporary file that replaces ``path`` when the block ends without error.
    ``mode`` is ``"w"`` (text, ``encoding`` and ``newline`` as for ``open``) or ``"wb"``."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file writes whole files: mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    refuse_non_regular(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        if mode == "wb":
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding, newline=newline)
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)      # mkstemp makes it owner-only; an output gets the usual mode
        refuse_non_regular(path)            # again: something may have appeared there meanwhile
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_file(path, "wb") as handle:
        handle.write(data)


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (``encoding`` UTF-8 unless told)."""
    with atomic_file(path, "w", encoding=encoding) as handle:
        handle.write(text)


def finite_or_null(data):
    """``data`` with every NaN or infinite float replaced by None: JSON has no NaN, and
    ``json.dumps`` would write the bare token ``NaN`` that strict parsers reject."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite_or_null(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_or_null(v) for v in data]
    return data


def atomic_write_json(path: PathLike, data, **dumps_options) -> None:
    """``json.dumps(data, **dumps_options)`` plus a final newline, written atomically. Always
    valid JSON: a NaN or infinity (an undefined metric) is written as ``null``."""
    try:
        text = json.dumps(data, allow_nan=False, **dumps_options)
    except ValueError:
        text = json.dumps(finite_or_null(data), allow_nan=False, **dumps_options)
    atomic_write_text(path, text + "\n")


def atomic_savefig(figure, path: PathLike, **savefig_options) -> None:
    """``figure.savefig(path, **savefig_options)`` (a matplotlib Figure), written atomically;
    the format comes from the file's suffix as savefig would take it."""
    savefig_options.setdefault("format", Path(path).suffix.lstrip(".").lower() or "png")
    with atomic_file(path, "wb") as handle:
        figure.savefig(handle, **savefig_options)


def append_records(path: PathLike, data: bytes) -> None:
    """Append ``data`` (one or more complete lines) to ``path`` with one ``write`` under an
    exclusive lock, then fsync: what append-only outputs (episode logs, per-step CSVs) use.
    A writer killed before the write leaves the file as it was; one killed during it can leave
    a torn last line, which readers skip, and the next append starts on a fresh line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
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


def drop_torn_tail(path: PathLike) -> int:
    """Cut a torn last line (what a writer killed mid-append leaves: bytes after the last
    newline) off an append-only file, so that a resumed run appends after whole records only.
    Returns the number of bytes removed (0 when the file ends with a newline or is absent)."""
    path = Path(path)
    if not path.exists():
        return 0
    with open(path, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        keep = size
        while keep > 0:
            step = min(keep, 65536)
            handle.seek(keep - step)
            chunk = handle.read(step)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = keep - step + newline + 1
                break
            keep -= step
        if keep < size:
            handle.truncate(keep)
        return size - keep


def append_csv_rows(path: PathLike, rows) -> None:
    """Append CSV ``rows`` (lists of cells) to ``path`` as one :func:`append_records` write."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    append_records(path, buffer.getvalue().encode("utf-8"))


@contextlib.contextmanager
def atomic_dir(path: PathLike, marker: Optional[str] = None) -> Iterator[Path]:
    """A temporary folder that becomes ``path`` when the block ends without error.

    An existing ``path`` is replaced as a whole. So that a user's other files are never
    deleted, it must be empty or hold ``marker`` (the file that says it is an earlier output
    of the same kind, e.g. ``export.json``); otherwise FileExistsError is raised before
    anything is written."""
    path = Path(path)
    refuse_non_regular(path, folder=True)
    if path.exists():
        if any(path.iterdir()) and not (marker and (path / marker).is_file()):
            what = f"no {marker}" if marker else "it is not empty"
            raise FileExistsError(f"{path} already holds other files ({what}): it would be replaced as a whole; "
                                  f"choose a new or empty folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp"))
    old = None
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_UMASK)
        if path.exists():
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".old"))
            os.replace(path, old / path.name)
        os.replace(tmp, path)
    except BaseException:
        if old is not None and (old / path.name).exists() and not path.exists():
            os.replace(old / path.name, path)      # the new one did not go in: put the old back
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        raise
    _fsync_dir(path.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
