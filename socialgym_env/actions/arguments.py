"""Argument kinds: one slot of an action (a choice, a player, an integer, a word, free text),
each parsing whole tokens from the front of the action's text, describing itself to agents,
giving its JSON schema and, when finite, its options."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Optional

from .action import ActionError
from .text_safety import fold

# Punctuation an agent may wrap a token in ("Alice," or "defect.") without changing it.
EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>*"
_TOKEN_SPLIT = re.compile(r"[\s,]+")
_INT_RE = re.compile(r"^[+-]?\d+$")
# Capped before parsing (the shared rules, "Invalid actions": junk never crashes an env).
MAX_INT_DIGITS = 18         # every Int range in the games fits; avoids int() on huge digit strings


def clean_token(token: str) -> str:
    """``token`` without the punctuation an agent may wrap it in."""
    return token.strip(EDGE_PUNCTUATION)


class Arg:
    """One argument slot. ``parse`` consumes text from the front of the remaining string."""

    name = "ARG"
    takes_rest = False

    def parse(self, rest: str) -> tuple[object, str]:
        raise NotImplementedError

    def render(self, value) -> str:
        return str(value)

    def describe(self) -> str:
        raise NotImplementedError

    def schema(self) -> dict:
        raise NotImplementedError

    def options(self) -> Optional[list]:
        """All values, or None when the set is unbounded (free text)."""
        return None

    def sample(self, rng: random.Random):
        return rng.choice(self.options())


def next_token(rest: str) -> tuple[str, str]:
    """The first token of ``rest`` (tokens end at whitespace and commas) and the text after it;
    for :class:`Arg` kinds defined elsewhere (a game's own move slot)."""
    rest = rest.lstrip(" \t\n,")
    if not rest:
        return "", ""
    match = _TOKEN_SPLIT.search(rest)
    if match is None:
        return rest, ""
    return rest[: match.start()], rest[match.end():]


@dataclass(frozen=True)
class Choice(Arg):
    """One of a fixed list of words (case-insensitive, whole token)."""

    choices: tuple
    name: str = "OPTION"

    def parse(self, rest):
        token, rest = next_token(rest)
        cleaned = fold(clean_token(token))
        for option in self.choices:
            if fold(option) == cleaned:
                return option, rest
        raise ActionError(f"{self.name} must be one of: {', '.join(self.choices)} (got {token!r})")

    def describe(self):
        return f"{self.name} one of: {', '.join(self.choices)}"

    def schema(self):
        return {"type": "string", "enum": list(self.choices)}

    def options(self):
        return list(self.choices)


@dataclass(frozen=True)
class Player(Arg):
    """A player named by display name (case-insensitive) or agent id; the value is the agent id."""

    candidates: tuple  # ((agent_id, display_name), ...)
    name: str = "NAME"

    def parse(self, rest):
        token, rest = next_token(rest)
        cleaned = fold(clean_token(token))
        for agent_id, display in self.candidates:
            if cleaned in (fold(display), fold(agent_id)):
                return agent_id, rest
        names = ", ".join(display for _, display in self.candidates) or "(nobody)"
        raise ActionError(f"{self.name} must be one of: {names} (got {token!r})")

    def render(self, value):
        for agent_id, display in reversed(self.candidates):     # the last, as a dict of them would give
            if agent_id == value:
                return display
        return value

    def describe(self):
        return f"{self.name} one of: {', '.join(d for _, d in self.candidates)}"

    def schema(self):
        return {"type": "string", "enum": [d for _, d in self.candidates]}

    def options(self):
        return [agent_id for agent_id, _ in self.candidates]


@dataclass(frozen=True)
class Int(Arg):
    """An integer in [low, high]."""

    low: int
    high: int
    name: str = "N"

    def parse(self, rest):
        token, rest = next_token(rest)
        cleaned = clean_token(token)
        if not _INT_RE.match(cleaned):
            raise ActionError(f"{self.name} must be a whole number from {self.low} to {self.high} (got {token[:40]!r})")
        if len(cleaned) > MAX_INT_DIGITS:
            raise ActionError(f"{self.name} must be from {self.low} to {self.high} (got a {len(cleaned)}-digit number)")
        value = int(cleaned)
        if not self.low <= value <= self.high:
            raise ActionError(f"{self.name} must be from {self.low} to {self.high} (got {value})")
        return value, rest

    def describe(self):
        return f"{self.name} a whole number from {self.low} to {self.high}"

    def schema(self):
        return {"type": "integer", "minimum": self.low, "maximum": self.high}

    def options(self):
        return list(range(self.low, self.high + 1))


@dataclass(frozen=True)
class Word(Arg):
    """A single free word (e.g. a guess or a one-word clue)."""

    max_length: int = 40
    name: str = "WORD"

    def parse(self, rest):
        token, rest = next_token(rest)
        cleaned = clean_token(token)
        if not cleaned:
            raise ActionError(f"{self.name} is missing")
        if len(cleaned) > self.max_length:
            raise ActionError(f"{self.name} is longer than {self.max_length} characters")
        return cleaned, rest

    def describe(self):
        return f"{self.name} a single word"

    def schema(self):
        # the pattern tells constrained decoders that spaces and commas end the word
        return {"type": "string", "maxLength": self.max_length, "pattern": r"^[^\s,]+$"}

    def sample(self, rng):
        return rng.choice(_SAMPLE_WORDS)


@dataclass(frozen=True)
class Text(Arg):
    """Free text up to ``max_length`` characters; consumes the rest of the action string."""

    max_length: int = 500
    name: str = "TEXT"
    takes_rest = True

    def parse(self, rest):
        text = " ".join(rest.split())
        if not text:
            raise ActionError(f"{self.name} is empty")
        if len(text) > self.max_length:
            raise ActionError(f"{self.name} is longer than {self.max_length} characters ({len(text)})")
        return text, ""

    def describe(self):
        return f"{self.name} free text, at most {self.max_length} characters"

    def schema(self):
        return {"type": "string", "maxLength": self.max_length}

    def sample(self, rng):
        return rng.choice(_SAMPLE_SENTENCES)[: self.max_length].strip()


_SAMPLE_WORDS = ("apple", "river", "blue", "music", "stone", "winter", "bread", "tiger")
_SAMPLE_SENTENCES = (
    "I think we should keep an open mind.",
    "Let's cooperate this time.",
    "I'm not sure who to trust yet.",
    "Something about the last round doesn't add up.",
    "I agree with what was said before.",
)
