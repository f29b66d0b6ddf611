"""The action grammar: one declaration of a phase's legal actions serves everything.

A phase declares its legal actions as a list of :class:`ActionSpec`. From that one list the
engine derives the human-readable legal-action lines shown to agents, a JSON schema, strict
parsing of the agent's string (whole tokens only: "eyes" is never "yes"), validation with a
reason, uniform sampling for random agents and fuzzing, and the finite enumeration used for
discrete masks.

Agents send strings in either form::

    {"action_type": "vote", "argument": "Alice"}
    vote Alice
"""
from __future__ import annotations

import itertools
import json
import operator
import random
import re
import reprlib
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

# Punctuation an agent may wrap a token in ("Alice," or "defect.") without changing it.
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>*"
_TOKEN_SPLIT = re.compile(r"[\s,]+")
_INT_RE = re.compile(r"^[+-]?\d+$")
ENUMERATION_LIMIT = 5000


# Caps applied before parsing (the shared rules, "Invalid actions": junk never crashes an env).
MAX_ACTION_CHARS = 4000     # the longest legal action is a 600-character talk line in JSON
MAX_JSON_DEPTH = 8          # {"action_type": ..., "argument": [...]} needs 2
MAX_INT_DIGITS = 18         # every Int range in the games fits; avoids int() on huge digit strings
# Free texts that go to logs and messages besides the action itself (invalid-action reasons,
# model replies' parse errors, backend errors, failure reasons) are clipped to this many characters.
MAX_LOG_TEXT_CHARS = 1000


class ActionError(ValueError):
    """An action string that does not parse or is not legal; ``str(err)`` is the reason."""


def _clean_token(token: str) -> str:
    return token.strip(_EDGE_PUNCTUATION)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with every lone surrogate (which UTF-8 cannot encode) replaced by U+FFFD, so a
    model reply or action carrying one never breaks a transcript, a print or a log line."""
    return _LONE_SURROGATE.sub("\ufffd", text)


_PLAIN_SCALARS = frozenset((int, float, bool, type(None)))


def encodable_data(value):
    """``value`` (JSON-like data: dicts, lists, tuples, strings, numbers) with every string,
    keys included, passed through :func:`encodable`. For what callers attach to records
    (policy names, model prompts and replies). Data without a lone surrogate come back as the
    very same object (no copy: a caller may still hold and extend it); only containers on the
    way to a replaced string are rebuilt."""
    if isinstance(value, str):
        return encodable(value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        # the usual case, a flat dict of ASCII keys and scalars (a config): nothing to replace
        for key, item in value.items():
            if key.__class__ is not str or not key.isascii():
                break
            kind = item.__class__
            if kind is str:
                if not item.isascii():
                    break
            elif kind not in _PLAIN_SCALARS:
                break
        else:
            return value
        items = [(encodable_data(k), encodable_data(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        items = [encodable_data(v) for v in value]
        if all(v is v0 for v, v0 in zip(items, value)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


class _BoundedRepr(reprlib.Repr):
    """``reprlib`` limits (long strings, big or deep containers cut with "...") plus integers
    too long for ``repr`` (Python refuses more than 4,300 digits) described by their size."""

    def __init__(self):
        super().__init__()
        self.maxstring = self.maxother = 80
        self.maxlong = 40

    def repr_int(self, value, level):
        if value.bit_length() > 128:
            return f"<int of about {int(value.bit_length() * 0.30103) + 1} digits>"
        return super().repr_int(value, level)

    def repr_bytes(self, value, level):
        return repr(value[:self.maxstring]) + ("..." if len(value) > self.maxstring else "")

    def repr_bytearray(self, value, level):
        return f"bytearray({self.repr_bytes(bytes(value[:self.maxstring + 1]), level)})"


_BOUNDED_REPR = _BoundedRepr()


def safe_repr(value, limit: int = 200) -> str:
    """A short ``repr`` of any object that never raises: bounded for huge ints, long strings,
    bytes and deep or big containers, a placeholder when the object's own ``__repr__`` fails,
    lone surrogates replaced. For messages and logs that name what a caller passed."""
    try:
        text = _BOUNDED_REPR.repr(value)
    except Exception:            # a __repr__ that raises, or anything reprlib cannot bound
        text = f"<{type(value).__name__} object>"
    return clip(encodable(text), limit)


def clip(text: str, limit: int = MAX_LOG_TEXT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, saying how much was cut, so one huge reply
    or error message cannot blow up a log line or a printed message."""
    if len(text) <= limit:
        return text
    marker = f"... [{len(text) - limit} more characters cut]"
    return text[:max(0, limit - len(marker))] + marker


def fold(text: str) -> str:
    """The form names and keywords are matched in (the shared rules in ``socialgym_env.games``): NFC, then case folding,
    so a decomposed "Björn" (o + combining diaeresis) is the composed "Björn"."""
    if text.isascii():
        return text.lower()         # ASCII is its own NFC form, and folds as it lowers
    return unicodedata.normalize("NFC", text).casefold()


@dataclass(frozen=True, init=False)
class Action:
    """A parsed, validated action: its type, its argument values and the canonical text."""

    type: str
    values: tuple = ()
    text: str = ""

    def __init__(self, type: str, values: tuple = (), text: str = ""):
        # Not the frozen dataclass's __init__ (object.__setattr__ per field, twice as slow):
        # an enumeration builds one Action per legal move.
        fields = self.__dict__
        fields["type"], fields["values"], fields["text"] = type, values, text

    @property
    def arg(self):
        """The first argument value (most action types take one)."""
        return self.values[0] if self.values else None

    def __str__(self) -> str:
        return self.text or self.type


# --------------------------------------------------------------------------------------
# Argument kinds
# --------------------------------------------------------------------------------------
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


def _next_token(rest: str) -> tuple[str, str]:
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
        token, rest = _next_token(rest)
        cleaned = fold(_clean_token(token))
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
        token, rest = _next_token(rest)
        cleaned = fold(_clean_token(token))
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
        token, rest = _next_token(rest)
        cleaned = _clean_token(token)
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
        token, rest = _next_token(rest)
        cleaned = _clean_token(token)
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


# --------------------------------------------------------------------------------------
# Action types and grammars
# --------------------------------------------------------------------------------------
_NEW_DICT = object()      # ActionSpec's schema_extra default: a new dict for each spec
@dataclass(frozen=True, init=False)
class ActionSpec:
    """One action type: its keyword, its argument slots and an optional cross-argument check.

    ``repeat`` > 1 means the single argument slot is taken that many times (``propose A B C``);
    ``distinct`` forbids repeats and ``unordered`` makes enumeration use combinations.
    ``check(values)`` returns a reason string when the values are illegal together.
    """

    type: str
    args: tuple = ()
    help: str = ""
    repeat: int = 1
    distinct: bool = False
    unordered: bool = False
    check: Optional[Callable[[tuple], Optional[str]]] = field(default=None, compare=False)
    sampler: Optional[Callable[[random.Random], tuple]] = field(default=None, compare=False)
    # Extra JSON-schema keywords for the argument (e.g. {"x-sum": 100}), so that a constrained
    # decoder can honour a rule that ``check`` enforces.
    schema_extra: dict = field(default_factory=dict, compare=False)

    def __init__(self, type: str, args: tuple = (), help: str = "", repeat: int = 1, distinct: bool = False,
                 unordered: bool = False, check: Optional[Callable[[tuple], Optional[str]]] = None,
                 sampler: Optional[Callable[[random.Random], tuple]] = None, schema_extra: Optional[dict] = _NEW_DICT):
        # The dataclass's own __init__ for a frozen class sets each field through
        # object.__setattr__, twice as slow; phases build new specs at every decision.
        fields = self.__dict__
        fields["type"], fields["args"], fields["help"], fields["repeat"] = type, args, help, repeat
        fields["distinct"], fields["unordered"], fields["check"], fields["sampler"] = distinct, unordered, check, sampler
        fields["schema_extra"] = {} if schema_extra is _NEW_DICT else schema_extra

    @property
    def slots(self) -> tuple:
        if self.repeat > 1:
            return tuple(self.args[0] for _ in range(self.repeat))
        return self.args

    def usage(self) -> str:
        if self.repeat > 1:
            return f"{self.type} " + " ".join(f"{self.args[0].name}{i + 1}" for i in range(self.repeat))
        return " ".join([self.type] + [arg.name for arg in self.args])

    def describe(self) -> str:
        parts = [self.usage()]
        details = [arg.describe() for arg in self.args]
        if self.repeat > 1:
            details.append(f"exactly {self.repeat}" + (", all different" if self.distinct else ""))
        if self.help:
            details.insert(0, self.help)
        if details:
            parts.append(" — " + "; ".join(details))
        return "".join(parts)

    def render(self, values: tuple) -> str:
        return " ".join([self.type] + [slot.render(v) for slot, v in zip(self.slots, values)])

    def render_all(self, legal: list) -> list[str]:
        """``[self.render(values) for values in legal]``, each slot's value rendered once (a
        Player's name, an Int's digits): an enumeration repeats the same values many times."""
        slots, keyword = self.slots, self.type
        try:
            # a Player's names are its candidates' (what Player.render looks up one by one)
            words = [dict(slot.candidates) if slot.__class__ is Player else
                     {value: slot.render(value) for value in slot.options()} for slot in slots]
            if len(slots) == 1:
                (first,) = words
                return [f"{keyword} {first[a]}" for (a,) in legal]
            if len(slots) == 2:
                first, second = words
                return [f"{keyword} {first[a]} {second[b]}" for a, b in legal]
            return [" ".join([keyword, *[word[value] for word, value in zip(words, values)]]) for values in legal]
        except (TypeError, KeyError):     # an unhashable value, or one its slot does not list
            return [self.render(values) for values in legal]

    def parse_args(self, rest: str) -> tuple:
        values = []
        for slot in self.slots:
            if not rest.strip(" \t\n,") and not slot.takes_rest:
                raise ActionError(f"'{self.type}' needs {self.usage()!r}")
            value, rest = slot.parse(rest)
            values.append(value)
        if rest.strip(" \t\n" + _EDGE_PUNCTUATION):
            raise ActionError(f"unexpected text after '{self.usage()}': {rest.strip()!r}")
        return self.validate(tuple(values))

    def validate(self, values: tuple) -> tuple:
        if self.distinct and len(set(values)) != len(values):
            raise ActionError(f"'{self.type}' needs {self.repeat} different values")
        if self.check is not None:
            reason = self.check(values)
            if reason:
                raise ActionError(reason)
        return values

    def enumerate(self) -> Optional[list[tuple]]:
        options = [slot.options() for slot in self.slots]
        if any(o is None for o in options):
            return None
        size = 1
        for o in options:
            size *= max(len(o), 1)
        if size > ENUMERATION_LIMIT:
            return None
        if self.repeat > 1 and self.unordered:
            combos = itertools.combinations(options[0], self.repeat)
        else:
            combos = itertools.product(*options)
        # validate() for each combination, inlined: Liar's Dice checks up to 90 bids a turn
        distinct, check = self.distinct, self.check
        if not distinct and check is None:
            return list(combos)
        legal = []
        for values in combos:
            if distinct and len(set(values)) != len(values):
                continue
            if check is not None:
                try:
                    if check(values):
                        continue
                except ActionError:
                    continue
            legal.append(values)
        return legal

    def sample(self, rng: random.Random) -> Optional[tuple]:
        if self.sampler is not None:
            return self.sampler(rng)
        legal = self.enumerate()
        if legal is not None:
            return rng.choice(legal) if legal else None
        for _ in range(50):
            try:
                return self.validate(tuple(slot.sample(rng) for slot in self.slots))
            except ActionError:
                continue
        return None

    def schema(self) -> dict:
        argument: dict
        slots = self.slots
        if not slots:
            argument = {"type": "string", "maxLength": 0}
        elif len(slots) == 1:
            argument = slots[0].schema()
        else:
            argument = {"type": "array", "items": [slot.schema() for slot in slots],
                        "minItems": len(slots), "maxItems": len(slots)}
        argument.update(self.schema_extra)
        return {"type": "object",
                "properties": {"action_type": {"const": self.type}, "argument": argument},
                "required": ["action_type"] + (["argument"] if slots else [])}


# What a spec without callables (no check, no sampler) gives is a pure function of its
# compared fields, and phases rebuild equal specs at every decision (the same moves, the same
# candidates): its description and enumeration are memoised by equality, in a bounded table.
_SPEC_FACTS: dict = {}
_SPEC_FACTS_MAX = 4096


# A spec with a check reads something besides its fields (equality ignores the check), so it is
# memoised only when its caller says what that is: cached_spec(key, build) builds it once per
# key and its enumeration is memoised with it. Bounded like the tables above.
_KEYED_SPECS: dict = {}          # key -> spec
_KEYED_FACTS: dict = {}          # id(spec) -> (spec, its facts); the spec held, so the id stays its own
_KEYED_SPECS_MAX = 512


def cached_spec(key, build: Callable[[], "ActionSpec"]) -> "ActionSpec":
    """The :class:`ActionSpec` that ``build()`` makes, built once for each ``key`` and shared by
    every decision (and env) that asks with an equal key; its enumeration and texts are
    computed once with it, even when it has a ``check``. ``key`` is any hashable value that
    starts with the caller's own name (the game id) and holds everything the spec depends on
    -- its arguments, its help text and whatever its ``check`` reads (Liar's Dice: the dice in
    play and the standing bid). A phase whose specs depend on nothing else may return such
    specs instead of building equal ones at every decision; nothing else changes."""
    spec = _KEYED_SPECS.get(key)
    if spec is None:
        if len(_KEYED_SPECS) >= _KEYED_SPECS_MAX:
            _KEYED_SPECS.clear()
            _KEYED_FACTS.clear()
        spec = _KEYED_SPECS[key] = build()
        _KEYED_FACTS[id(spec)] = (spec, {})
    return spec


def _pure_spec_facts(spec: "ActionSpec") -> Optional[dict]:
    if spec.check is not None or spec.sampler is not None:
        keyed = _KEYED_FACTS.get(id(spec))
        return keyed[1] if keyed is not None and keyed[0] is spec else None
    try:
        facts = _SPEC_FACTS.get(spec)
    except TypeError:                     # an argument holding a list: not hashable, not memoised
        return None
    if facts is None:
        if len(_SPEC_FACTS) >= _SPEC_FACTS_MAX:
            _SPEC_FACTS.clear()
        facts = _SPEC_FACTS[spec] = {}
    return facts


def _describe(spec: "ActionSpec") -> str:
    facts = _pure_spec_facts(spec)
    if facts is None:
        return spec.describe()
    if "describe" not in facts:
        facts["describe"] = spec.describe()
    return facts["describe"]


def _enumerate(spec: "ActionSpec") -> Optional[list]:
    facts = _pure_spec_facts(spec)
    if facts is None:
        return spec.enumerate()
    if "enumerate" not in facts:
        facts["enumerate"] = spec.enumerate()
    return facts["enumerate"]


def _enumerated_texts(spec: "ActionSpec", legal: Optional[list]) -> Optional[list]:
    """The canonical texts of ``legal`` (the spec's enumeration); memoised like it."""
    if legal is None:
        return None
    facts = _pure_spec_facts(spec)
    if facts is None:
        return spec.render_all(legal)
    if "texts" not in facts:
        facts["texts"] = spec.render_all(legal)
    return facts["texts"]


def lookup_key(text: str) -> str:
    """The case-insensitive form of an action string in the fast lane: outer whitespace
    stripped, then case folded (``fold``; plain ``lower`` for ASCII, which folds the same)."""
    text = text.strip()
    return text.lower() if text.isascii() else fold(text)


class _GrammarFacts:
    """What a list of specs gives that does not depend on the decision it was built for:
    keyword table, descriptions, enumeration, the legal actions as Actions and the fast-lane
    lookup (canonical text -> Action). Shared by every Grammar of equal pure specs."""

    __slots__ = ("specs", "shared", "by_type", "descriptions", "legal", "texts", "actions", "table", "asked",
                 "longest")

    def __init__(self, specs: tuple, shared: bool):
        self.specs = specs
        self.shared = shared
        by_type: dict = {}
        for spec in specs:
            by_type[fold(spec.type)] = spec          # as parse finds it: the last of a keyword
        self.by_type = by_type
        self.descriptions = None
        self.legal: dict = {}
        self.texts = None          # enumerate(): a list, False when unbounded (not built: None)
        self.actions = None
        self.table = None
        self.asked = False         # looked up once already (the table is built on the second)
        self.longest = 0           # the longest key of the table


_VALUE_ARGS = frozenset((Choice, Player, Int, Word, Text))     # frozen dataclasses: equal means alike
_GRAMMAR_FACTS: dict = {}
# Bounded (cleared when full): a spec list repeats within an episode (the same vote for every
# voter), rarely across episodes whose names differ; 256 keeps 64 live Triadic Werewolf envs
# within the memory of the engine before the fast lane (socialgym_benchmarks/perf/env_memory.py).
_GRAMMAR_FACTS_MAX = 256


# The same facts found by the specs' identity: a phase that returns the very spec objects it
# returned before (kept by the game, as the matrix games and talk phases do, or cached_spec) skips hashing and
# comparing them. An entry holds its specs, so the ids in its key stay theirs.
_FACTS_BY_IDENTITY: dict = {}       # (id of each spec) -> (the specs, their shared facts)
_FACTS_BY_IDENTITY_MAX = 64         # the lists phases keep are few (a game's moves, talk)


def _facts_for(specs: tuple) -> _GrammarFacts:
    identity = tuple(map(id, specs))
    known = _FACTS_BY_IDENTITY.get(identity)
    if known is not None:
        return known[1]
    for spec in specs:
        # a check may read live state; another Arg kind may compare by identity (a chess
        # move slot holds the live board) or read case: facts of this decision only
        if spec.check is not None or spec.sampler is not None:
            return _GrammarFacts(specs, False)
        for arg in spec.args:
            if arg.__class__ not in _VALUE_ARGS:
                return _GrammarFacts(specs, False)
    try:
        facts = _GRAMMAR_FACTS.get(specs)
    except TypeError:                     # an argument holding a list: not hashable, not shared
        return _GrammarFacts(specs, False)
    if facts is None:
        if len(_GRAMMAR_FACTS) >= _GRAMMAR_FACTS_MAX:
            _GRAMMAR_FACTS.clear()
            _FACTS_BY_IDENTITY.clear()
        facts = _GRAMMAR_FACTS[specs] = _GrammarFacts(specs, True)
    elif not all(map(operator.is_, facts.specs, specs)):
        return facts        # equal specs built anew: a phase that builds them at every decision
    # the first objects of these facts (or them again): next time found by identity
    if len(_FACTS_BY_IDENTITY) >= _FACTS_BY_IDENTITY_MAX:
        _FACTS_BY_IDENTITY.clear()
    _FACTS_BY_IDENTITY[identity] = (facts.specs, facts)
    return facts


class Grammar:
    """The legal actions of one agent at one decision point.

    Two ways in: :meth:`parse` (any string, JSON or plain form, with a reason when it is not
    legal) and the fast lane -- :meth:`lookup` resolves a string that is one of the finite
    legal list's canonical texts (up to outer whitespace and case) by one dict look-up, and
    :meth:`actions` lists the legal actions in :meth:`enumerate` order for integer actions.
    Both give exactly the Action that ``parse`` gives for the same text.
    """

    def __init__(self, specs: Sequence[ActionSpec]):
        if not specs:
            raise ValueError("a grammar needs at least one action type")
        self.specs = tuple(specs)
        self._facts = _facts_for(self.specs)
        self.by_type = self._facts.by_type

    # -- text for agents -------------------------------------------------------------
    def legal_actions(self) -> list[str]:
        facts = self._facts
        if facts.descriptions is None:
            facts.descriptions = [_describe(spec) for spec in self.specs]
        return list(facts.descriptions)

    def action_types(self) -> list[str]:
        return [spec.type for spec in self.specs]

    def json_schema(self) -> dict:
        return {"oneOf": [spec.schema() for spec in self.specs]}

    # -- parsing ------------------------------------------------------------------------
    def parse(self, raw) -> Action:
        """Parse an agent's string (JSON or plain form) into a legal Action, or raise ActionError."""
        if raw is None:
            raise ActionError("no action given")
        if not isinstance(raw, str):
            raise ActionError(f"an action must be a string, not {type(raw).__name__}")
        text = encodable(raw).strip()
        if not text:
            raise ActionError("empty action")
        if len(text) > MAX_ACTION_CHARS:
            # Capped before any parsing: no over-long integer or deep JSON reaches the parsers.
            raise ActionError(f"action too long: {len(text)} characters, at most {MAX_ACTION_CHARS}")
        if text.startswith("{"):
            action_type, rest = _split_json(text)
        else:
            action_type, rest = _next_token(text)
            action_type = _clean_token(action_type)
        # no keyword is 64 characters long: a junk first token is unknown without folding it
        spec = self.by_type.get(fold(action_type)) if len(action_type) <= 64 else None
        if spec is None:
            raise ActionError(f"unknown action type {action_type[:40]!r}; legal: {', '.join(self.action_types())}")
        values = spec.parse_args(rest)
        return Action(spec.type, values, spec.render(values))

    def lookup(self, raw) -> Optional[Action]:
        """The fast lane: the legal Action whose canonical text ``raw`` is -- up to outer
        whitespace and case, which the parser ignores too -- or None, and the caller
        parses it: raw is not a string or is another form, or the legal list is not finite.
        The table is built once per list of equal pure specs (no ``check``/``sampler``, only
        choices, players and integers), at its second look-up, and shared by every decision
        that declares it. Other decisions parse: their legal set may depend on the live
        state, and a table built for one look-up costs more than the parse."""
        if raw.__class__ is not str or not self._facts.shared:
            return None
        facts = self._facts
        table = facts.table
        if table is None:
            if not facts.asked:
                # Many decisions declare specs seen once (a help text naming tonight's
                # victim): their first look-up parses; only a repeated list gets a table.
                facts.asked = True
                return None
            table = self._build_table()
        if len(raw) > facts.longest + 64:
            return None      # longer than any legal text and some padding: parse it (no fold of junk)
        return table.get(lookup_key(raw))

    def _build_table(self) -> dict:
        """Case-folded canonical text -> Action (the objects of ``actions()``). Shared specs
        hold only choices, players and integers, which the parser reads regardless of case
        (the keyword too)."""
        facts = self._facts
        table: dict = {}
        actions = self.actions()
        if actions is not None:
            start = 0
            for position, spec in enumerate(facts.specs):
                count = len(self._legal(position))
                if facts.by_type[fold(spec.type)] is spec:   # a keyword declared twice parses as its last spec
                    for action in actions[start:start + count]:
                        table.setdefault(lookup_key(action.text), action)
                start += count
        facts.longest = max(map(len, table), default=0)
        facts.table = table
        return table

    def make(self, action_type: str, *values) -> Action:
        """Build an Action from values (used by fallbacks and scripted agents); validates."""
        spec = self.by_type[fold(action_type)]
        values = spec.validate(tuple(values))
        return Action(spec.type, values, spec.render(values))

    # -- sampling and enumeration -------------------------------------------------------
    def sample(self, rng: random.Random) -> Action:
        """A uniformly random legal action: uniform over action types, then over arguments."""
        specs = self.specs
        order = list(range(len(specs)))
        if len(order) > 1:          # shuffling one item draws nothing
            rng.shuffle(order)      # the permutation shuffling the specs themselves would give
        for position in order:
            spec = specs[position]
            if spec.sampler is None:
                # spec.sample without re-enumerating: the same RNG calls, the same result
                legal = self._legal(position)
                if legal is not None:
                    if not legal:
                        continue
                    index = rng.choice(range(len(legal)))      # the draw of rng.choice(legal)
                    actions = self._facts.actions
                    if actions:             # listed already: the same Action, not rendered again
                        for before in range(position):
                            index += len(self._legal(before))
                        return actions[index]
                    values = legal[index]
                    return Action(spec.type, values, spec.render(values))
            values = spec.sample(rng)
            if values is not None:
                return Action(spec.type, values, spec.render(values))
        raise ActionError("no legal action could be sampled")

    def _legal(self, position: int) -> Optional[list[tuple]]:
        """``specs[position].enumerate()``, once per spec of this grammar."""
        legal = self._facts.legal
        if position not in legal:
            legal[position] = _enumerate(self.specs[position])
        return legal[position]

    def _texts(self):
        facts = self._facts
        if facts.texts is None:
            out = []
            for position, spec in enumerate(self.specs):
                texts = _enumerated_texts(spec, self._legal(position))
                if texts is None:
                    out = False
                    break
                out.extend(texts)
            facts.texts = out
        return facts.texts

    def enumerate_now(self) -> None:
        """Enumerate at once (a spec's ``check`` may read live state: a grammar kept for a past
        decision must have enumerated while that state was current). Only the legal values
        are computed now; their texts, a function of the values alone, when first asked.
        Shared facts (no check, only choices, players and integers) read no state: nothing to do."""
        if self._facts.shared:
            return
        for position in range(len(self.specs)):
            if self._legal(position) is None:
                return

    def enumerate(self) -> Optional[list[str]]:
        """Every legal action's canonical text, or None if the set is unbounded or too large."""
        texts = self._texts()
        return list(texts) if texts is not False else None

    def actions(self) -> Optional[list[Action]]:
        """The legal actions in ``enumerate()`` order (position i is text i); None when the set
        is not finite. Shared: not to be mutated."""
        facts = self._facts
        if facts.actions is None:
            if self._texts() is False:
                facts.actions = False
            else:
                actions, texts, start = [], facts.texts, 0
                for position, spec in enumerate(self.specs):
                    legal = self._legal(position)
                    keyword = spec.type
                    actions.extend([Action(keyword, values, text)
                                    for values, text in zip(legal, texts[start:start + len(legal)])])
                    start += len(legal)
                facts.actions = actions
        return facts.actions if facts.actions is not False else None


def _json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, strings skipped (a cheap scan, no parse)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _split_json(text: str) -> tuple[str, str]:
    if _json_depth(text) > MAX_JSON_DEPTH:
        raise ActionError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as err:
        raise ActionError(f"invalid JSON: {err.msg}") from None
    except (ValueError, RecursionError) as err:      # e.g. an integer past Python's digit limit
        raise ActionError(f"invalid JSON: {str(err)[:80]}") from None
    if not isinstance(payload, dict) or "action_type" not in payload:
        raise ActionError('JSON action needs an "action_type" key')
    action_type = payload["action_type"]
    if not isinstance(action_type, str):
        raise ActionError('"action_type" must be a string')
    argument = payload.get("argument", "")
    if argument is None:
        argument = ""
    if isinstance(argument, list):
        argument = " ".join(str(item) for item in argument)
    elif isinstance(argument, (dict, bool)):
        raise ActionError('"argument" must be a string, a number or a list')
    # A JSON escape (\ud83d) gives a lone surrogate the raw text did not hold: replaced here
    # too, so no parsed action, message or record carries one.
    return encodable(action_type).strip(), encodable(str(argument))
