"""The action grammar: one declaration of a phase's legal actions serves everything.

A phase declares its legal actions as a list of :class:`ActionSpec`. From that one list the
engine derives the human-readable legal-action lines shown to agents, a JSON schema, strict
parsing of the agent's string (whole tokens only: "eyes" is never "yes"), validation with a
reason, uniform sampling for random agents and fuzzing, and the finite enumeration used for
discrete masks.

Agents send strings in either form::

    {"action_type": "vote", "argument": "Alice"}
    vote Alice

The parts, one concern each: ``text_safety`` (what reaches logs and records), ``action`` (the
parsed action and its error), ``arguments`` (argument kinds), ``spec`` (:class:`ActionSpec`),
``fast_lane`` (the bounded caches shared by equal specs), ``json_form`` (the JSON form's
splitting) and ``grammar`` (:class:`Grammar`). Import from here: every name below is public here.
"""
from .action import Action, ActionError
from .arguments import MAX_INT_DIGITS, Arg, Choice, Int, Player, Text, Word, next_token
from .fast_lane import cached_spec, lookup_key
from .grammar import MAX_ACTION_CHARS, Grammar
from .json_form import MAX_JSON_DEPTH
from .spec import ENUMERATION_LIMIT, ActionSpec
from .text_safety import MAX_LOG_TEXT_CHARS, clip, encodable, encodable_data, fold, safe_repr

__all__ = [
    "Action", "ActionError", "ActionSpec", "Arg", "Choice", "ENUMERATION_LIMIT", "Grammar", "Int",
    "MAX_ACTION_CHARS", "MAX_INT_DIGITS", "MAX_JSON_DEPTH", "MAX_LOG_TEXT_CHARS", "Player", "Text",
    "Word", "cached_spec", "clip", "encodable", "encodable_data", "fold", "lookup_key", "next_token", "safe_repr",
]
