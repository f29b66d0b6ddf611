"""SocialMaze Hidden Role Deduction (the SocialMaze paper) as a certified puzzle task.

n players (presets "easy" n=6, "hard" n=10; any n >= 4), T rounds (default 3).
Roles: one Criminal, Investigators (always truthful), Rumormongers (told they are
Investigators; each statement true or false at random) and Lunatics (told they are
the Criminal; play like it). Variants: original (C + I), rumormonger (x >= 1 R),
lunatic (y >= 1 L), full (x + y >= 1). Each round every player says "Player u is /
is not the criminal". From Player 1's seat — knowing the role counts and the role
Player 1 was *told*, which may be false — name the Criminal and Player 1's true role.

Every released instance is certified by exhaustive hypothesis checking
(:mod:`.verifier`) to have exactly one consistent (Criminal, Player 1 role) answer,
and is tagged high- or low-evidence (does a true Investigator talk about Player 1?).

Importing this package registers the Gymnasium envs ``socialgym/HiddenRoleDeduction-v0`` and
``socialgym/FindTheSpy-v0`` (:mod:`.spy`, the Find the Spy observer task). Hidden Role
Deduction needs numpy, gymnasium and (for the CLI) typer and nothing else from
``socialgym_env`` but its atomic writer (:mod:`socialgym_env.atomic`); Find the Spy reads the Undercover word bank.

    >>> from socialgym_env.socialmaze import MazeConfig, generate_instance, score_answer
    >>> inst = generate_instance(MazeConfig.from_preset("easy", "full"), seed=0)
    >>> score_answer(f"Criminal: Player {inst.criminal}; My role: {inst.player1_role}", inst).reward
    1.0
"""

from .baselines import exact_answer, heuristic_answer
from .dataset import generate_dataset, read_jsonl, write_jsonl
from .generator import GenerationStats, generate_instance
from .instance import (
    PRESETS,
    VARIANTS,
    MazeConfig,
    MazeInstance,
    Puzzle,
    Role,
    Statement,
    render_prompt,
)
from .scoring import ParsedAnswer, ScoreResult, parse_answer, score_answer
from .task import ENV_ID, HiddenRoleDeductionEnv, register
from .verifier import Verification, solve_exact, verify
from . import spy

register()
spy.register()

__all__ = [
    "ENV_ID",
    "PRESETS",
    "VARIANTS",
    "GenerationStats",
    "HiddenRoleDeductionEnv",
    "MazeConfig",
    "MazeInstance",
    "ParsedAnswer",
    "Puzzle",
    "Role",
    "ScoreResult",
    "Statement",
    "Verification",
    "exact_answer",
    "generate_dataset",
    "generate_instance",
    "spy",
    "heuristic_answer",
    "parse_answer",
    "read_jsonl",
    "register",
    "render_prompt",
    "score_answer",
    "solve_exact",
    "verify",
    "write_jsonl",
]
