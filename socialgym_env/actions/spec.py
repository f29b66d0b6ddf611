"""One action type (:class:`ActionSpec`): its keyword, its argument slots and an optional
cross-argument check; from it come the usage line, parsing of the arguments, validation,
enumeration, sampling and the JSON schema."""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Callable, Optional

from .action import ActionError
from .arguments import EDGE_PUNCTUATION, Player

ENUMERATION_LIMIT = 5000   # more combinations than this: the spec's set counts as unbounded
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
        if rest.strip(" \t\n" + EDGE_PUNCTUATION):
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
