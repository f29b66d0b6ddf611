"""Every shell command in README.md and docs/ is run by a test, or says why not (issue 65 item 10).

A fenced ``bash``/``sh``/``shell``/``console`` block (or one with no language) holds commands, and
the line before it is a marker comment, invisible on GitHub and in MkDocs, saying how they are
checked; clauses are separated by ``;``::

    <!-- commands: run; small "--episodes 20" -> "--episodes 1" -->

- ``run``: this test runs the block (each ``small "A" -> "B"`` applied first: the same command
  at a small size) with bash ``-e`` in a scratch folder that links the repository's top-level
  entries (so ``docs/...`` and ``socialgym_benchmarks/...`` resolve and ``runs/`` stays there),
  ``socialgym`` being this checkout's CLI; it must exit 0. ``{port}`` in a replacement is a free
  port.
- ``long <N s|min|h> <where measured>``: not run here; the time it took when measured.
- ``tested <tests/file.py>``: that test file runs the command at a small size (every module the
  block runs with ``python -m`` and every ``socialgym`` subcommand must appear in it).
- ``needs <gpu|network|person|install|docker|cluster>``: it cannot run in a test: a CUDA GPU, a
  remote service, a person at the keyboard, package installation (or the two make commands,
  which are the demo and the whole suite), a Docker daemon, a multi-process Ray cluster.

A clause ``line "PREFIX": <kind>`` gives the commands that start with PREFIX (double quotes
dropped) their own kind in a
``run`` block (e.g. ``line "pip install": needs install``); ``serves "PREFIX"`` marks a command that
serves until stopped: it is started on a free port (``--port``), must answer HTTP, and is stopped.
A block with no marker, or a marker this module cannot read, fails
``test_every_shell_block_in_the_docs_says_how_it_is_checked``.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHELL_LANGUAGES = ("bash", "sh", "shell", "console", "")
NEEDS = {"gpu", "network", "person", "install", "docker", "cluster"}
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!-- commands: (.*?) -->\s*$")
DURATION = re.compile(r"^long ((?:about )?\d[\d,.]*\s*(?:s|min|h)\b.*)$")
CLAUSES = re.compile(r';(?=(?:[^"]*"[^"]*")*[^"]*$)')     # a ";" outside quotes


@dataclass
class Block:
    page: str
    line: int
    text: str
    marker: str | None
    kind: str = ""                                   # run | long | tested | needs
    detail: str = ""
    small: list = field(default_factory=list)        # (old, new) substitutions
    lines: dict = field(default_factory=dict)        # command prefix -> (kind, detail)
    serves: list = field(default_factory=list)       # command prefixes that serve until stopped

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def shell_blocks(root: Path = ROOT) -> list[Block]:
    """Every shell block of the docs with the marker on the line before it (None: no marker)."""
    blocks = []
    for page in doc_pages(root):
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            if match.group(1) not in SHELL_LANGUAGES:
                continue
            line = text.count("\n", 0, match.start()) + 1
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = MARKER.search(before)
            blocks.append(Block(str(page.relative_to(root)), line, match.group(2), marker and marker.group(1)))
    return blocks


QUOTED = r'"((?:[^"\\]|\\.)*)"'


def _kind(clause: str) -> tuple[str, str]:
    """(kind, detail) of a kind clause; ValueError if it is none."""
    if clause == "run":
        return "run", ""
    if DURATION.match(clause):
        return "long", clause[5:]
    if clause.startswith("tested "):
        return "tested", clause[7:].strip()
    if clause.startswith("needs ") and clause[6:].strip() in NEEDS:
        return "needs", clause[6:].strip()
    raise ValueError(f"not a kind: {clause!r} (run | long <N s|min|h> ... | tested <file> | needs {'|'.join(sorted(NEEDS))})")


def parse_marker(block: Block) -> Block:
    """Fill in ``block``'s kind, substitutions and per-command kinds; ValueError if unreadable."""
    if block.marker is None:
        raise ValueError("no <!-- commands: ... --> marker on the line before the block")
    for clause in (c.strip() for c in CLAUSES.split(block.marker)):
        small = re.fullmatch(rf"small {QUOTED} -> {QUOTED}", clause)
        line = re.fullmatch(rf"line {QUOTED}: (.+)", clause)
        serves = re.fullmatch(rf"serves {QUOTED}", clause)
        if small:
            block.small.append((small.group(1).replace('\\"', '"'), small.group(2).replace('\\"', '"')))
        elif line:
            block.lines[line.group(1).replace('\\"', '"')] = _kind(line.group(2).strip())
        elif serves:
            block.serves.append(serves.group(1))
        elif block.kind:
            raise ValueError(f"a second kind clause: {clause!r}")
        else:
            block.kind, block.detail = _kind(clause)
    if not block.kind:
        raise ValueError("no kind clause (run, long, tested or needs)")
    if block.kind != "run" and (block.small or block.lines or block.serves):
        raise ValueError("small, line and serves clauses go with run")
    for old, _ in block.small:
        if old not in block.text:
            raise ValueError(f"small {old!r}: not in the block")
    return block


def _start(command: str) -> str:
    """A command as ``line`` and ``serves`` prefixes match it: without indentation or double quotes."""
    return command.lstrip().replace('"', "")


def commands(text: str) -> list[str]:
    """The block's commands: lines joined over a trailing backslash, comments and blanks dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def invoked(command: str) -> list[str]:
    """What a command runs that a test file must name: ``python -m MODULE``'s module, the script
    of ``python PATH.py`` and ``socialgym SUBCOMMAND``'s subcommand."""
    names = re.findall(r"python3? -m ([\w.]+)", command) + re.findall(r"python3? ([\w/]+\.py)", command)
    names += [f"{m}" for m in re.findall(r"(?:^|[;&|]\s*)socialgym (\w[\w-]*)", command)]
    return names


def test_every_shell_block_in_the_docs_says_how_it_is_checked():
    problems = []
    for block in shell_blocks():
        try:
            parse_marker(block)
        except ValueError as err:
            problems.append(f"{block.id}: {err}")
            continue
        if block.kind == "tested":
            problems += _tested_problems(block, block.detail, commands(block.text))
        for prefix, (kind, detail) in block.lines.items():
            matched = [c for c in commands(block.text) if _start(c).startswith(prefix)]
            if not matched:
                problems.append(f"{block.id}: line {prefix!r}: no command starts so")
            elif kind == "tested":
                problems += _tested_problems(block, detail, matched)
    assert not problems, "shell blocks in the docs that no test runs and no marker explains:\n" + "\n".join(problems)


def _tested_problems(block: Block, test: str, tested: list[str]) -> list[str]:
    """What is wrong with the claim that ``test`` runs the commands ``tested`` ([] if nothing)."""
    path = ROOT / test.split("::")[0]
    if not path.is_file():
        return [f"{block.id}: tested {test}: no such test file"]
    source = path.read_text(encoding="utf-8")
    if "::" in test and f"def {test.split('::')[1]}(" not in source:
        return [f"{block.id}: tested {test}: no such test"]
    missing = sorted({name for command in tested for name in invoked(command)
                      if name not in source and name.rsplit(".", 1)[-1] not in source})
    return [f"{block.id}: tested {test}, which never runs {', '.join(missing)}"] if missing else []


def test_the_marker_check_catches_an_unmarked_block_and_a_bad_marker(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("```bash\nsocialgym list\n```\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text(
        "<!-- commands: long soon -->\n```bash\nsocialgym list\n```\n\n"
        "<!-- commands: run; small \"--n 9\" -> \"--n 1\" -->\n```sh\nsocialgym list\n```\n\n"
        "<!-- commands: needs gpu -->\n```bash\nnvidia-smi\n```\n\n```python\nprint(1)\n```\n", encoding="utf-8")
    errors = {}
    for block in shell_blocks(tmp_path):
        try:
            parse_marker(block)
        except ValueError as err:
            errors[block.id] = str(err)
    assert list(errors) == ["README.md:1", "docs/a.md:2", "docs/a.md:7"]
    assert "no <!-- commands" in errors["README.md:1"] and "not a kind" in errors["docs/a.md:2"]
    assert "not in the block" in errors["docs/a.md:7"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A scratch folder that links the repository's top-level entries, with a ``socialgym`` of
    this checkout first on PATH."""
    work = tmp_path_factory.mktemp("doc-commands")
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "runs", "exports"):
            (work / entry.name).symlink_to(entry)
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "socialgym"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m socialgym_env.cli "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    os.environ["DOC_COMMANDS_BIN"] = str(bin_dir)
    return work


def _environment() -> dict:
    paths = [str(ROOT), str(ROOT / "environments" / "socialgym_verifiers"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p),
            "PATH": os.environ["DOC_COMMANDS_BIN"] + os.pathsep + os.path.dirname(sys.executable)
                    + os.pathsep + os.environ.get("PATH", "")}


def _start_server(command: str, work: Path) -> tuple[subprocess.Popen, int]:
    """Start a command that serves until stopped, on a free port; wait until it answers HTTP."""
    port = _free_port()
    command = re.sub(r"--port \d+", "", command).split("#")[0].strip() + f" --port {port}"
    process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=work, env=_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{command} exited {process.returncode}: {process.stdout.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            return process, port
        except urllib.error.HTTPError:                 # it answered (a 404 at / is an answer)
            return process, port
        except OSError:
            time.sleep(0.3)
    _stop(process)
    raise AssertionError(f"{command} never answered on port {port}")


def _stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def _script(block: Block) -> tuple[str, list[str]]:
    """The bash script of a run block at its small size, and its commands that serve. A command
    goes by the original text: a ``line`` prefix first (not run here), then a ``serves`` one."""
    port = str(_free_port())
    kept, servers = [], []
    for command in commands(block.text):
        start = _start(command)
        if any(start.startswith(prefix) for prefix in block.lines):
            continue
        for old, new in block.small:
            command = command.replace(old, new.replace("{port}", port))
        (servers if any(start.startswith(prefix) for prefix in block.serves) else kept).append(command)
    return "\n".join(kept), servers


RUN_BLOCKS = [block for block in shell_blocks() if block.marker and block.marker.split(";")[0].strip() == "run"]


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[block.id for block in RUN_BLOCKS])
def test_a_documented_command_runs_at_a_small_size(block, workdir):
    parse_marker(block)
    script, servers = _script(block)
    for server in servers:
        process, _ = _start_server(server, workdir)
        _stop(process)
    if not script:
        return
    # Its own process group, so that a server a command started with & is stopped with it; its
    # output to files, which such a server may hold open after the script ended (a pipe would wait).
    out, err = workdir / "stdout.txt", workdir / "stderr.txt"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=workdir, env=_environment(),
                                   stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            process.wait(timeout=900)
        finally:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    assert process.returncode == 0, (f"{block.id} exited {process.returncode}:\n{script}\n--- stdout\n"
                                     f"{out.read_text()[-3000:]}\n--- stderr\n{err.read_text()[-3000:]}")


def test_the_offline_model_answers_a_legal_move():
    """The stand-in model server the routes' docs use: a schema instance when the request
    constrains the reply, else the first listed legal move."""
    import json

    from socialgym_agents.serve.offline_model import OfflineModel

    replies = []
    with OfflineModel(replies=replies) as server:
        def ask(body):
            request = urllib.request.Request(server.url + "/chat/completions", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())["choices"][0]["message"]["content"]
        free = ask({"model": "m", "messages": [{"role": "user", "content": "Round 1.\nLegal moves: raise; call; fold"}]})
        schema = {"type": "object", "properties": {"action_type": {"enum": ["cooperate", "defect"]}}}
        constrained = ask({"model": "m", "messages": [{"role": "user", "content": "?"}],
                           "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}})
        nothing = ask({"model": "m", "messages": [{"role": "user", "content": "hello"}]})
    assert (free, json.loads(constrained), nothing) == ("raise", {"action_type": "cooperate"}, "pass")
    assert [model for model, _, _ in replies] == ["m", "m", "m"]


def test_the_offline_model_command_refuses_a_bad_port():
    done = subprocess.run([sys.executable, "-m", "socialgym_agents.serve.offline_model", "--port", "70000"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=_environment_without_bin())
    assert done.returncode == 2 and "--port must be 0-65535" in done.stderr


def _environment_without_bin() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_commands_of_a_block_join_continued_lines_and_drop_comments():
    text = "# a comment\nsocialgym tournament --games a \\\n    --episodes 2   # small\n\npython -m x.y --n 1\n"
    assert commands(text) == ["socialgym tournament --games a --episodes 2   # small", "python -m x.y --n 1"]
    assert invoked(commands(text)[0]) == ["tournament"] and invoked(commands(text)[1]) == ["x.y"]
