"""Data model of a Hidden Role Deduction puzzle (the SocialMaze paper).

A game has ``n`` players, ``Player 1 … Player n``. Each holds one secret role:

========== ==================================================================
Role       Behaviour (what the generator simulates)
========== ==================================================================
Criminal   exactly one; picks targets to deflect suspicion, lies at will
Investigator  picks suspicious targets; every statement is true
Rumormonger   told it is an Investigator; targets like one, but each
              statement is true or false at random (50/50)
Lunatic    told it is the Criminal and plays the Criminal's policy, but it is
           *not* the Criminal
========== ==================================================================

For ``T`` rounds every player names one other player and says "Player u is the
criminal" or "Player u is not the criminal". The solver sees the log from
Player 1's seat, the public role counts and the role Player 1 was *told*, which
may be false (a Rumormonger is told Investigator, a Lunatic is told Criminal).
It must name the Criminal and Player 1's true role.

This module holds the configuration (:class:`MazeConfig`), the public puzzle
(:class:`Puzzle`, everything the solver may see), the released instance
(:class:`MazeInstance`, puzzle + hidden truth + certificate), and the prompt
rendering. All dataclasses round-trip through JSON via ``to_dict``/``from_dict``.
Player numbers are 1-based everywhere in this public model, as in the paper.
"""

from __future__ import annotations

import enum
import string
from dataclasses import dataclass
from typing import Any, Mapping

SCHEMA_VERSION = 1


class Role(enum.StrEnum):
    INVESTIGATOR = "Investigator"
    CRIMINAL = "Criminal"
    RUMORMONGER = "Rumormonger"
    LUNATIC = "Lunatic"


#: The role a player is *told*, given its true role (paper: R is told I, L is told C).
TOLD_ROLE: dict[Role, Role] = {
    Role.INVESTIGATOR: Role.INVESTIGATOR,
    Role.CRIMINAL: Role.CRIMINAL,
    Role.RUMORMONGER: Role.INVESTIGATOR,
    Role.LUNATIC: Role.CRIMINAL,
}

#: The true roles compatible with a told role (the inverse of TOLD_ROLE).
POSSIBLE_TRUE_ROLES: dict[Role, tuple[Role, ...]] = {
    Role.INVESTIGATOR: (Role.INVESTIGATOR, Role.RUMORMONGER),
    Role.CRIMINAL: (Role.CRIMINAL, Role.LUNATIC),
}

VARIANTS: tuple[str, ...] = ("original", "rumormonger", "lunatic", "full")
#: (rumormongers x, lunatics y) used when a variant is chosen without explicit counts;
#: the paper's Full-task experiments use x = y = 1.
DEFAULT_COUNTS: dict[str, tuple[int, int]] = {
    "original": (0, 0),
    "rumormonger": (1, 0),
    "lunatic": (0, 1),
    "full": (1, 1),
}
PRESETS: dict[str, int] = {"easy": 6, "hard": 10}
DEFAULT_ROUNDS = 3
MIN_PLAYERS = 4

#: Every character the prompt renderer may emit (the Text spaces use it as charset).
CHARSET: str = string.printable


def parse_role(value: Any) -> Role:
    """Return the :class:`Role` named by ``value`` (case-insensitive, British spelling ok)."""
    if isinstance(value, Role):
        return value
    key = str(value).strip().lower().replace("rumour", "rumor").replace("-", "").replace(" ", "")
    for role in Role:
        if role.value.lower() == key:
            return role
    raise ValueError(f"unknown role {value!r}; valid roles: {', '.join(r.value for r in Role)}")


def _check_int(name: str, value: Any) -> None:
    # bool is an int subclass; a True player count is a caller bug, not 1.
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")


@dataclass(frozen=True)
class MazeConfig:
    """Game size and role composition. Invalid combinations raise ``ValueError``."""

    n_players: int = PRESETS["easy"]
    n_rounds: int = DEFAULT_ROUNDS
    variant: str = "full"
    n_rumormongers: int = 1
    n_lunatics: int = 1

    def __post_init__(self) -> None:
        for name in ("n_players", "n_rounds", "n_rumormongers", "n_lunatics"):
            _check_int(name, getattr(self, name))
        variant = str(self.variant).strip().lower()
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; valid variants: {', '.join(VARIANTS)}")
        object.__setattr__(self, "variant", variant)
        if self.n_players < MIN_PLAYERS:
            raise ValueError(f"n_players must be >= {MIN_PLAYERS}, got {self.n_players}")
        if self.n_rounds < 1:
            raise ValueError(f"n_rounds must be >= 1, got {self.n_rounds}")
        x, y = self.n_rumormongers, self.n_lunatics
        if x < 0 or y < 0:
            raise ValueError(f"role counts must be >= 0, got n_rumormongers={x}, n_lunatics={y}")
        rule = {
            "original": (x == 0 and y == 0, "n_rumormongers = 0 and n_lunatics = 0"),
            "rumormonger": (x >= 1 and y == 0, "n_rumormongers >= 1 and n_lunatics = 0"),
            "lunatic": (x == 0 and y >= 1, "n_rumormongers = 0 and n_lunatics >= 1"),
            "full": (x + y >= 1, "n_rumormongers + n_lunatics >= 1"),
        }[variant]
        if not rule[0]:
            raise ValueError(
                f"variant {variant!r} needs {rule[1]}; got n_rumormongers={x}, n_lunatics={y}"
            )
        if self.n_investigators < 1:
            # Without a truthful player nothing can be deduced.
            raise ValueError(
                f"role counts do not fit {self.n_players} players: need 1 Criminal + "
                f"{x} Rumormongers + {y} Lunatics + at least 1 Investigator, i.e. "
                f"n_rumormongers + n_lunatics <= {self.n_players - 2}"
            )

    @classmethod
    def from_preset(
        cls,
        preset: str = "easy",
        variant: str = "full",
        *,
        n_players: int | None = None,
        n_rounds: int = DEFAULT_ROUNDS,
        n_rumormongers: int | None = None,
        n_lunatics: int | None = None,
    ) -> "MazeConfig":
        """Build a config from a preset ("easy": 6 players, "hard": 10) and a variant.

        Counts left as ``None`` take the variant's default (see ``DEFAULT_COUNTS``);
        ``n_players`` overrides the preset's size.
        """
        key = str(preset).strip().lower()
        if key not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
        v = str(variant).strip().lower()
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
        dx, dy = DEFAULT_COUNTS[v]
        return cls(
            n_players=PRESETS[key] if n_players is None else n_players,
            n_rounds=n_rounds,
            variant=v,
            n_rumormongers=dx if n_rumormongers is None else n_rumormongers,
            n_lunatics=dy if n_lunatics is None else n_lunatics,
        )

    @property
    def n_investigators(self) -> int:
        return self.n_players - 1 - self.n_rumormongers - self.n_lunatics

    @property
    def preset(self) -> str:
        """"easy"/"hard" when the size matches a paper preset with T=3, else "custom"."""
        if self.n_rounds == DEFAULT_ROUNDS:
            for name, n in PRESETS.items():
                if n == self.n_players:
                    return name
        return "custom"

    def role_counts(self) -> dict[Role, int]:
        return {
            Role.INVESTIGATOR: self.n_investigators,
            Role.CRIMINAL: 1,
            Role.RUMORMONGER: self.n_rumormongers,
            Role.LUNATIC: self.n_lunatics,
        }

    def roles_present(self) -> tuple[Role, ...]:
        """Roles with a non-zero count, in the canonical I, C, R, L order."""
        return tuple(r for r, k in self.role_counts().items() if k > 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_players": self.n_players,
            "n_rounds": self.n_rounds,
            "variant": self.variant,
            "n_rumormongers": self.n_rumormongers,
            "n_lunatics": self.n_lunatics,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MazeConfig":
        return cls(
            n_players=d["n_players"],
            n_rounds=d["n_rounds"],
            variant=d["variant"],
            n_rumormongers=d["n_rumormongers"],
            n_lunatics=d["n_lunatics"],
        )


@dataclass(frozen=True)
class Statement:
    """``speaker`` says ``target`` is (``says_criminal``) / is not the criminal, in ``round``."""

    round: int
    speaker: int
    target: int
    says_criminal: bool

    def text(self) -> str:
        verb = "is" if self.says_criminal else "is not"
        return f"Player {self.speaker} says Player {self.target} {verb} the criminal."

    def is_true(self, criminal: int) -> bool:
        return (self.target == criminal) == self.says_criminal

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "speaker": self.speaker,
            "target": self.target,
            "says_criminal": self.says_criminal,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Statement":
        claim = d["says_criminal"]
        if not isinstance(claim, bool):
            # bool("false") is True: refuse anything but a real JSON boolean.
            raise ValueError(f"says_criminal must be true or false, got {claim!r}")
        return cls(int(d["round"]), int(d["speaker"]), int(d["target"]), claim)


@dataclass(frozen=True)
class Puzzle:
    """What the solver may see: the config (role counts), Player 1's told role, the log."""

    config: MazeConfig
    told_role: Role
    statements: tuple[Statement, ...]

    def __post_init__(self) -> None:
        told = parse_role(self.told_role)
        if told not in POSSIBLE_TRUE_ROLES:
            raise ValueError(f"a told role is Investigator or Criminal, got {told.value}")
        object.__setattr__(self, "told_role", told)
        object.__setattr__(self, "statements", tuple(self.statements))
        n, t = self.config.n_players, self.config.n_rounds
        for s in self.statements:
            if not (1 <= s.speaker <= n and 1 <= s.target <= n):
                raise ValueError(f"player numbers must be in 1..{n}: {s}")
            if s.speaker == s.target:
                raise ValueError(f"a player cannot name itself: {s}")
            if not 1 <= s.round <= t:
                raise ValueError(f"round must be in 1..{t}: {s}")

    def prompt(self) -> str:
        return render_prompt(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.config.to_dict(),
            "told_role": self.told_role.value,
            "statements": [s.to_dict() for s in self.statements],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Puzzle":
        return cls(
            config=MazeConfig.from_dict(d),
            told_role=parse_role(d["told_role"]),
            statements=tuple(Statement.from_dict(s) for s in d["statements"]),
        )


@dataclass(frozen=True)
class MazeInstance:
    """A released puzzle: the public part, the hidden roles and the uniqueness certificate.

    ``roles[i]`` is the true role of Player ``i + 1``. ``n_consistent`` is the number of
    role assignments consistent with the public information (all of which share the
    answer); ``attempts`` is how many simulated games the generator needed.
    """

    id: str
    seed: int
    puzzle: Puzzle
    roles: tuple[Role, ...]
    n_consistent: int
    attempts: int = 1

    def __post_init__(self) -> None:
        roles = tuple(parse_role(r) for r in self.roles)
        object.__setattr__(self, "roles", roles)
        cfg = self.puzzle.config
        if len(roles) != cfg.n_players:
            raise ValueError(f"roles has {len(roles)} entries, expected {cfg.n_players}")
        counts = {r: roles.count(r) for r in Role}
        if counts != cfg.role_counts():
            raise ValueError(f"roles {counts} do not match the config's counts {cfg.role_counts()}")
        if TOLD_ROLE[roles[0]] != self.puzzle.told_role:
            raise ValueError(
                f"Player 1 is a {roles[0].value} but was told {self.puzzle.told_role.value}"
            )

    # Convenience views -----------------------------------------------------------
    @property
    def config(self) -> MazeConfig:
        return self.puzzle.config

    @property
    def told_role(self) -> Role:
        return self.puzzle.told_role

    @property
    def statements(self) -> tuple[Statement, ...]:
        return self.puzzle.statements

    @property
    def criminal(self) -> int:
        return self.roles.index(Role.CRIMINAL) + 1

    @property
    def player1_role(self) -> Role:
        return self.roles[0]

    @property
    def evidence(self) -> str:
        """"high" if some true Investigator's statement is about Player 1, else "low".

        This is the paper's evidence split: only such a statement checks Player 1's
        role directly.
        """
        for s in self.statements:
            if s.target == 1 and self.roles[s.speaker - 1] == Role.INVESTIGATOR:
                return "high"
        return "low"

    def prompt(self) -> str:
        return render_prompt(self.puzzle)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "id": self.id,
            "seed": self.seed,
            "preset": self.config.preset,
            **self.puzzle.to_dict(),
            "prompt": self.prompt(),
            "answer": {"criminal": self.criminal, "role": self.player1_role.value},
            "roles": [r.value for r in self.roles],
            "evidence": self.evidence,
            "n_consistent_assignments": self.n_consistent,
            "attempts": self.attempts,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MazeInstance":
        version = d.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise ValueError(f"unsupported schema_version {version}; this code reads {SCHEMA_VERSION}")
        inst = cls(
            id=str(d["id"]),
            seed=int(d["seed"]),
            puzzle=Puzzle.from_dict(d),
            roles=tuple(parse_role(r) for r in d["roles"]),
            n_consistent=int(d["n_consistent_assignments"]),
            attempts=int(d.get("attempts", 1)),
        )
        # The answer is derived from roles; a mismatch means a corrupted or hand-edited row.
        answer = d.get("answer")
        if answer is not None and (
            int(answer["criminal"]) != inst.criminal or parse_role(answer["role"]) != inst.player1_role
        ):
            raise ValueError(f"instance {inst.id}: stored answer {answer} contradicts its roles")
        return inst


_ROLE_RULES: dict[Role, str] = {
    Role.INVESTIGATOR: "Investigator: every statement an Investigator makes is true.",
    Role.CRIMINAL: "Criminal: there is exactly one; its statements may be true or false.",
    Role.RUMORMONGER: (
        "Rumormonger: is told it is an Investigator and picks targets like one, but each of "
        "its statements is true or false at random."
    ),
    Role.LUNATIC: (
        "Lunatic: is told it is the Criminal and behaves like the Criminal (its statements may "
        "be true or false), but it is not the Criminal."
    ),
}


def _plural(k: int, role: Role) -> str:
    return f"{k} {role.value}" + ("" if k == 1 else "s")


def render_prompt(puzzle: Puzzle) -> str:
    """The observation text: rules, role counts, told role, the log and the question."""
    cfg = puzzle.config
    counts = cfg.role_counts()
    present = cfg.roles_present()
    # Criminal first, Investigators last: the order people read role lists in.
    order = [Role.CRIMINAL, Role.RUMORMONGER, Role.LUNATIC, Role.INVESTIGATOR]
    lines = [
        f"Hidden Role Deduction. There are {cfg.n_players} players, Player 1 to Player "
        f"{cfg.n_players}. You are Player 1 and only observe; you do not act.",
        "Roles in this game (the counts are known to everyone): "
        + ", ".join(_plural(counts[r], r) for r in order if counts[r] > 0)
        + ".",
        "Role rules:",
    ]
    lines += [f"- {_ROLE_RULES[r]}" for r in order if r in present]
    lines.append(
        f"In each of {cfg.n_rounds} round(s) every player names one other player and says "
        "whether that player is the criminal."
    )
    told = puzzle.told_role
    lines.append(f"You (Player 1) were told that your role is: {told.value}.")
    deceivers = [r for r in POSSIBLE_TRUE_ROLES[told] if r != told and r in present]
    if deceivers:
        lines.append(
            f"This may be false: a {deceivers[0].value} is also told it is the {told.value}."
            if told == Role.CRIMINAL
            else f"This may be false: a {deceivers[0].value} is also told it is an {told.value}."
        )
    by_round: dict[int, list[Statement]] = {}
    for s in puzzle.statements:
        by_round.setdefault(s.round, []).append(s)
    for t in sorted(by_round):
        lines.append(f"Round {t}:")
        lines += [s.text() for s in sorted(by_round[t], key=lambda s: s.speaker)]
    role_names = "|".join(r.value for r in order if r in present)
    lines += [
        "Question: who is the Criminal, and what is your (Player 1's) true role?",
        f"Answer on the last line as: Criminal: Player <number>; My role: <{role_names}>",
    ]
    return "\n".join(lines)
