"""Reference solvers for Hidden Role Deduction; each maps a puzzle to an answer string.

* :func:`exact_answer` — the verifier as a solver; scores 100% on released instances.
* :func:`heuristic_answer` — a naive reader: believes Player 1's told role and, if
  told Investigator, names the most accused other player (ties: fewer "is not the
  criminal" statements, then the lower number). It ignores who is reliable, so it
  fails whenever a Rumormonger, the Criminal or a Lunatic steers the accusations,
  and it is always wrong about Player 1 when Player 1 is a Rumormonger or Lunatic.

Both return text in the prompt's answer format so they go through the same
parser as a model's answer (``scoring.score_answer``).
"""

from __future__ import annotations

from .instance import Puzzle, Role
from .verifier import solve_exact


def format_answer(criminal: int, role: Role) -> str:
    return f"Criminal: Player {criminal}; My role: {role.value}"


def exact_answer(puzzle: Puzzle) -> str:
    return format_answer(*solve_exact(puzzle))


def heuristic_guess(puzzle: Puzzle) -> tuple[int, Role]:
    if puzzle.told_role == Role.CRIMINAL:
        return 1, Role.CRIMINAL  # trusting "you are the Criminal" settles both parts
    n = puzzle.config.n_players
    accused = [0] * (n + 1)
    cleared = [0] * (n + 1)
    for s in puzzle.statements:
        if s.says_criminal:
            accused[s.target] += 1
        else:
            cleared[s.target] += 1
    criminal = min(range(2, n + 1), key=lambda u: (-accused[u], cleared[u], u))
    return criminal, Role.INVESTIGATOR


def heuristic_answer(puzzle: Puzzle) -> str:
    return format_answer(*heuristic_guess(puzzle))


SOLVERS = {"exact": exact_answer, "heuristic": heuristic_answer}
