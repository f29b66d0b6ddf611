"""What every command line of the project does with an exception: one line, an exit code.

    exit 0    done as asked
    exit 1    it ran, but did not do what was asked (episodes failed), or a bug in Social Gym:
              one line naming the exception, "run with --debug for the traceback"
    exit 2    bad input (an argument, an option, a file): one line naming what is wrong and
              what is valid; nothing was played or written
    exit 130  interrupted (Ctrl-C, SIGTERM); a resumable command says how to resume

``socialgym`` (socialgym_env.cli) and every ``python -m socialgym_training.*`` script run their body
through :func:`run_command`; ``--debug`` or ``SOCIALGYM_DEBUG=1`` re-raises instead, for the
traceback. The lowest layer owns this so the engine's own ``socialgym maze`` and the training
scripts share one wording.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
from pathlib import Path
from typing import Callable, Optional

from .atomic import NotRegularFileError, kind_of, refuse_non_regular
from .errors import SocialGymError

DEBUG_ENV = "SOCIALGYM_DEBUG"
EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 1, 2, 130


class PathArgumentError(SocialGymError, ValueError):
    """A path given on the command line that cannot be what the command writes (a folder where
    a file goes, a file where a folder goes); the message names it and what was expected."""


def debug_requested(argv: list) -> bool:
    return "--debug" in argv or os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes", "on")


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line, at most ``limit`` characters (a message that echoes user input)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


_one_line = one_line


def _first_file_above(path: Path) -> Optional[Path]:
    """The part of ``path`` that exists but is not a folder (a file, a device, a pipe) where a
    folder was expected (ENOTDIR)."""
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def explain_os_error(err: OSError) -> str:
    """An OSError as the file it concerns and what was expected there."""
    name = err.filename if err.filename is not None else ""
    path = Path(os.fsdecode(name)) if name != "" else None
    if path is None:
        return _one_line(err.strerror or str(err))
    if err.errno == errno.ENOTDIR:
        blocker = _first_file_above(path)
        if blocker is not None:
            return f"{_not_folder(blocker)} (while opening {_shown(path)})"
        return f"{path}: a part of this path is a file, expected a folder"
    if err.errno == errno.EISDIR:
        return f"{path} is a folder, expected a file"
    if err.errno == errno.ENOENT:
        return f"no such file or folder: {path}"
    if err.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied: {path}"
    if err.errno == errno.ENOSPC:
        return f"no space left on the device writing {path}"
    return f"{path}: {err.strerror or err}"


def explain(err: BaseException) -> Optional[str]:
    """One line for an error a user can fix (bad input), None for anything else (a bug)."""
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text (a binary file?): {err.reason} at byte {err.start}"
    if isinstance(err, json.JSONDecodeError):
        return f"not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})"
    if isinstance(err, OSError):
        return explain_os_error(err)
    if type(err).__module__.startswith("yaml") and type(err).__name__.endswith("Error"):
        return "invalid YAML: " + _one_line(err)
    if isinstance(err, StopIteration):
        return "an input holds no rows (an empty data set or split)"
    if isinstance(err, (SocialGymError, ValueError, TypeError)):
        return _one_line(err) or type(err).__name__
    return None


def _shown(path) -> str:
    """A path as a message shows it: at most 200 characters (a path can be megabytes long)."""
    return _one_line(os.fsdecode(path), 200)


def _not_folder(path: Path) -> str:
    return f"{_shown(path)} is {kind_of(path.stat().st_mode)}, expected a folder"


def check_output_file(path, option: str, replaced: bool = False) -> None:
    """Before any work: ``path`` can be a file to write (not a folder, not under a file);
    ``replaced``: the command replaces it whole (socialgym_env.atomic), so it must not exist as
    anything but a regular file (a device, a pipe, a link)."""
    path = Path(path)
    if path.is_dir():
        raise PathArgumentError(f"{option} {_shown(path)} is a folder, expected a file")
    blocker = _first_file_above(path.parent)
    if blocker is not None:
        raise PathArgumentError(f"{option} {_shown(path)}: {_not_folder(blocker)}")
    if replaced:
        try:
            refuse_non_regular(path)
        except NotRegularFileError as err:
            raise PathArgumentError(f"{option} {err}") from None
    # the folder gets the new file (atomic replacement writes beside it); an existing file written
    # in place must itself be writable (X_OK is a folder's check: a data file has no execute bit)
    _check_writable(path.parent, option)
    if path.exists() and not replaced and not os.access(path, os.W_OK):
        raise PathArgumentError(f"{option} {_shown(path)} is not writable (read-only or permission denied)")


def check_output_folder(path, option: str) -> None:
    """Before any work: ``path`` can be a folder to write into (not a file, not under a file,
    not in a folder this process may not write)."""
    blocker = _first_file_above(Path(path))
    if blocker is not None:
        raise PathArgumentError(f"{option} {_shown(path)}: {_not_folder(blocker)}")
    _check_writable(Path(path), option)


def _check_writable(path: Path, option: str) -> None:
    """The nearest existing folder at or above ``path`` is one this process may create files in
    (access(2) also says no on a read-only file system, even to root)."""
    existing = next((p for p in [path, *path.parents] if p.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        shown = "" if existing == path else f": {_shown(existing)}"
        raise PathArgumentError(f"{option} {_shown(path)}{shown} is not writable (read-only or permission denied)")


class OneLineArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors reach :func:`run_command` as one line, exit 2
    (argparse's own prints the usage block and the error on two)."""

    def error(self, message: str):
        raise SystemExit(f"{message} (see {self.prog} --help)")


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def run_command(body: Callable[[], object], prog: str, debug: bool = False) -> int:
    """Run ``body``; return its exit code, or print one line to stderr and return the code
    its exception means (module docstring). SIGTERM is handled as Ctrl-C, so a killed run
    unwinds (closing its logs) and says how to resume, as an interrupted one does."""
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:                 # not the main thread (tests): leave signals alone
        pass
    try:
        result = body()
        return result if isinstance(result, int) and not isinstance(result, bool) else 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(f"{prog}: error: {_one_line(stop.code)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:           # noqa: BLE001 -- the one place every exception is shown as a line
        if debug:
            raise
        message = explain(err)
        if message is not None:
            print(f"{prog}: error: {message} (run with --debug for the traceback)", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"{prog}: internal error: {type(err).__name__}: {_one_line(err, 200)} "
              f"(a bug in Social Gym; run with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _usage_line(err, prog: str) -> str:
    """A click/typer usage error (unknown option, bad value, missing argument) as one line."""
    ctx = getattr(err, "ctx", None)
    where = ctx.command_path if ctx is not None else prog
    hint = f" (see {where} --help)" if ctx is not None else ""
    return f"{where}: error: {' '.join(err.format_message().split())}{hint}"


def invoke_typer(app, argv: list, prog: str) -> int:
    """Run a typer app in click's non-standalone mode, so every error comes back to
    :func:`run_command` as an exception; usage errors are printed here as one line."""
    import typer
    import typer.main
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name=prog, standalone_mode=False)
    except typer.Abort:                            # Ctrl-C / end of input at a prompt
        raise KeyboardInterrupt from None
    except typer.TyperException as err:            # typer's (vendored) click usage errors
        if type(err).__name__ == "NoArgsIsHelpError":   # typer printed the help already
            return EXIT_BAD_INPUT
        print(_usage_line(err, prog), file=sys.stderr)
        return getattr(err, "exit_code", EXIT_BAD_INPUT)
    if result == EXIT_INTERRUPTED:                 # typer turns Ctrl-C into exit 130
        raise KeyboardInterrupt
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def main_of(body: Callable[[], object], prog: str) -> None:
    """``if __name__ == "__main__": main_of(lambda: main(...), "socialgym_training.sft")``: exit with
    :func:`run_command`'s code (``--debug`` is taken out of ``sys.argv`` first)."""
    debug = debug_requested(sys.argv)
    sys.argv = [a for a in sys.argv if a != "--debug"]
    raise SystemExit(run_command(body, prog, debug=debug))


def library_only(prog: str, instead: str) -> None:
    """The ``__main__`` of a library module: one line saying what to run instead, exit 2 (it
    would otherwise do nothing and exit 0, as if it had worked)."""
    print(f"{prog}: error: this module is a library, not a command; {instead}", file=sys.stderr)
    raise SystemExit(EXIT_BAD_INPUT)
