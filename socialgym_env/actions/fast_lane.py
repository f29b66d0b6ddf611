"""The fast lane's caches: what a spec or a list of specs gives that does not depend on the
decision it was built for (descriptions, enumerations, canonical texts, the look-up table), kept
in bounded tables and shared by every decision that declares equal specs."""
from __future__ import annotations

import operator
from typing import Callable, Optional

from .arguments import Choice, Int, Player, Text, Word
from .spec import ActionSpec
from .text_safety import fold

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


def cached_description(spec: "ActionSpec") -> str:
    facts = _pure_spec_facts(spec)
    if facts is None:
        return spec.describe()
    if "describe" not in facts:
        facts["describe"] = spec.describe()
    return facts["describe"]


def cached_enumeration(spec: "ActionSpec") -> Optional[list]:
    facts = _pure_spec_facts(spec)
    if facts is None:
        return spec.enumerate()
    if "enumerate" not in facts:
        facts["enumerate"] = spec.enumerate()
    return facts["enumerate"]


def cached_texts(spec: "ActionSpec", legal: Optional[list]) -> Optional[list]:
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


class GrammarFacts:
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


def grammar_facts(specs: tuple) -> GrammarFacts:
    identity = tuple(map(id, specs))
    known = _FACTS_BY_IDENTITY.get(identity)
    if known is not None:
        return known[1]
    for spec in specs:
        # a check may read live state; another Arg kind may compare by identity (a chess
        # move slot holds the live board) or read case: facts of this decision only
        if spec.check is not None or spec.sampler is not None:
            return GrammarFacts(specs, False)
        for arg in spec.args:
            if arg.__class__ not in _VALUE_ARGS:
                return GrammarFacts(specs, False)
    try:
        facts = _GRAMMAR_FACTS.get(specs)
    except TypeError:                     # an argument holding a list: not hashable, not shared
        return GrammarFacts(specs, False)
    if facts is None:
        if len(_GRAMMAR_FACTS) >= _GRAMMAR_FACTS_MAX:
            _GRAMMAR_FACTS.clear()
            _FACTS_BY_IDENTITY.clear()
        facts = _GRAMMAR_FACTS[specs] = GrammarFacts(specs, True)
    elif not all(map(operator.is_, facts.specs, specs)):
        return facts        # equal specs built anew: a phase that builds them at every decision
    # the first objects of these facts (or them again): next time found by identity
    if len(_FACTS_BY_IDENTITY) >= _FACTS_BY_IDENTITY_MAX:
        _FACTS_BY_IDENTITY.clear()
    _FACTS_BY_IDENTITY[identity] = (facts.specs, facts)
    return facts
