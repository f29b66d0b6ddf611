"""Code health of the library (issue 67, item 7): no module over 700 lines, no function over 60
lines, at most 15 blocks that radon ranks D or worse (cyclomatic complexity over 20) and none
ranked E or F (over 30, issue 11), and nothing pyflakes reports. Each failure lists the
offenders, largest first.

The library is the four packages socialgym_env, socialgym_agents, socialgym_benchmarks and
socialgym_training, every ``.py`` file under them. The measurement scripts in
``socialgym_benchmarks/perf/`` are included: they make the figures docs/benchmarks.md publishes
and are maintained with the library, so code the next engineer reads. Game modules
(``socialgym_env/games/``) are exempt from the module size only: each is one game's complete
rules, and a long game is long rules; their functions are held to the same limits as the rest.
Tests, examples and docs/scripts are not library.

Every check is a function of ``{path: source}`` so the planted tests at the end run the same
code on a folder of planted faults (each check must be able to fail)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pyflakes.checker
import pytest
from radon.complexity import cc_rank, cc_visit_ast

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("socialgym_env", "socialgym_agents", "socialgym_benchmarks", "socialgym_training")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 60
MAX_COMPLEX_BLOCKS = 15
COMPLEX_RANKS = ("D", "E", "F")
SIZE_EXEMPT = ("socialgym_env/games/",)      # the package's data/ holds JSON only, never counted


def library_sources(root: Path, packages=LIBRARY) -> dict[str, str]:
    """``{path relative to root: source}`` of every Python file under ``packages``."""
    return {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
            for package in packages for path in sorted((root / package).rglob("*.py"))}


@functools.lru_cache(maxsize=None)
def parsed(path: str, source: str) -> ast.Module:
    """Each file is parsed once for all the checks (parsing is most of their time)."""
    return ast.parse(source, path)


def big_modules(sources: dict[str, str]) -> list[str]:
    sizes = [(len(source.splitlines()), path) for path, source in sources.items()
             if not path.startswith(SIZE_EXEMPT)]
    return [f"{path}: {lines} lines" for lines, path in sorted(sizes, reverse=True) if lines > MAX_MODULE_LINES]


def long_functions(sources: dict[str, str]) -> list[str]:
    """Functions and methods, nested ones included; a function's lines run from its ``def`` to its
    last line (decorators not counted)."""
    found = []
    for path, source in sources.items():
        for node in ast.walk(parsed(path, source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append((lines, f"{path}:{node.lineno} {node.name}: {lines} lines"))
    return [line for _, line in sorted(found, reverse=True)]


def complex_blocks(sources: dict[str, str], ranks=COMPLEX_RANKS) -> list[str]:
    """What ``radon cc -n D`` lists (with ``ranks`` left as D, E, F): the functions, methods and
    classes (radon rates a class from its methods) of a rank in ``ranks``; a nested function
    counts in the function around it."""
    found = []
    for path, source in sources.items():
        for block in cc_visit_ast(parsed(path, source)):
            rank = cc_rank(block.complexity)
            if rank in ranks:
                found.append((block.complexity, f"{path}:{block.lineno} {block.fullname}: {rank} ({block.complexity})"))
    return [line for _, line in sorted(found, reverse=True)]


def pyflakes_messages(sources: dict[str, str]) -> list[str]:
    """What ``python -m pyflakes`` prints for each file (``path:line:column: message``)."""
    found = []
    for path, source in sources.items():
        messages = pyflakes.checker.Checker(parsed(path, source), filename=path).messages
        found += [str(message) for message in sorted(messages, key=lambda message: message.lineno)]
    return found


@functools.cache
def library() -> dict[str, str]:
    return library_sources(ROOT)


def fail_listing(offenders: list[str], what: str) -> None:
    """Fail with one line per offender (no traceback: the list is the message)."""
    pytest.fail(f"{len(offenders)} {what}:\n" + "\n".join(offenders), pytrace=False)


def test_the_library_is_where_the_checks_look():
    assert {path.split("/")[0] for path in library()} == set(LIBRARY)
    assert "socialgym_env/env.py" in library() and any(path.startswith("socialgym_benchmarks/perf/") for path in library())


def test_no_library_module_is_over_700_lines():
    if big := big_modules(library()):
        fail_listing(big, f"modules over {MAX_MODULE_LINES} lines (game modules exempt)")


def test_no_function_is_over_60_lines():
    if long := long_functions(library()):
        fail_listing(long, f"functions over {MAX_FUNCTION_LINES} lines")


def test_at_most_15_blocks_are_ranked_d_or_worse():
    if len(complex_ := complex_blocks(library())) > MAX_COMPLEX_BLOCKS:
        fail_listing(complex_, f"blocks ranked D or worse by radon (at most {MAX_COMPLEX_BLOCKS})")


def test_no_block_is_ranked_e_or_f():
    """The ceiling under the budget (issue 11): complexity over 30 nowhere."""
    if worst := complex_blocks(library(), ranks=("E", "F")):
        fail_listing(worst, "blocks ranked E or F by radon")


def test_pyflakes_reports_nothing():
    if messages := pyflakes_messages(library()):
        fail_listing(messages, "pyflakes messages")


# -- each check can fail: the same functions on planted faults ----------------------------------

def _function(name: str, lines: int) -> str:
    """A function of exactly ``lines`` lines."""
    return f"def {name}():\n" + "    x = 0\n" * (lines - 2) + "    return x\n"


def _branches(name: str, ifs: int) -> str:
    """A short function of cyclomatic complexity ``ifs + 1``."""
    return f"def {name}(x):\n" + "".join(f"    if x == {i}: return {i}\n" for i in range(ifs)) + "    return -1\n"


FAULTS = ("import os\n\n\n" + _function("sixty_one", 61) + "\n\n" + _function("sixty", 60) + "\n\n"
          + _branches("rank_d", 20) + "\n\n" + _branches("rank_c", 19) + "\n\n" + _branches("rank_e", 30))


def line_of(name: str) -> int:
    """The line of ``def name`` in FAULTS."""
    return next(number for number, line in enumerate(FAULTS.splitlines(), 1) if line.startswith(f"def {name}("))


@pytest.fixture
def planted(tmp_path):
    package = tmp_path / "socialgym_env"
    (package / "games").mkdir(parents=True)
    (package / "faults.py").write_text(FAULTS, encoding="utf-8")
    (package / "big.py").write_text("x = 1\n" * 701, encoding="utf-8")
    (package / "at_limit.py").write_text("x = 1\n" * 700, encoding="utf-8")
    (package / "games" / "long_game.py").write_text("x = 1\n" * 900, encoding="utf-8")
    return library_sources(tmp_path)


def test_a_planted_big_module_is_reported_and_a_game_module_is_exempt(planted):
    assert big_modules(planted) == ["socialgym_env/big.py: 701 lines"]


def test_a_planted_61_line_function_is_reported(planted):
    assert long_functions(planted) == [f"socialgym_env/faults.py:{line_of('sixty_one')} sixty_one: 61 lines"]


def test_planted_rank_d_and_e_blocks_are_reported(planted):
    rank_e = f"socialgym_env/faults.py:{line_of('rank_e')} rank_e: E (31)"
    assert complex_blocks(planted) == [rank_e, f"socialgym_env/faults.py:{line_of('rank_d')} rank_d: D (21)"]
    assert complex_blocks(planted, ranks=("E", "F")) == [rank_e]


def test_a_planted_unused_import_is_reported(planted):
    assert pyflakes_messages(planted) == ["socialgym_env/faults.py:1:1: 'os' imported but unused"]
