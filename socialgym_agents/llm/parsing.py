"""Parse a model reply into a ``{"action_type", "argument"}`` action and check it against info.

Accepted reply shapes (first match wins):

- a bare JSON object: ``{"action_type": "defect", "argument": ""}``
- the same inside a Markdown fence (```json ... ``` or ``` ... ```)
- a JSON object preceded and/or followed by other text (the first balanced ``{...}`` that
  parses is used)
- a Python-style dict with single quotes (``{'action_type': 'defect'}``): accepted through
  :func:`ast.literal_eval` of the balanced ``{...}`` (only literals, never code)

Think-then-act replies (``think=N``) wrap the action: ``{"reasoning": "...", "action": {...}}``;
:func:`parse_reply` plays the inner action and :func:`reply_reasoning` returns the reasoning.

Not accepted: plain text like ``defect`` (the prompt asks for JSON; the error says so and the
policy re-asks). Errors are short sentences that the re-ask shows the model.

Any reply, whatever its type or content (bytes, sets, nesting thousands deep, numbers of
thousands of digits, NaN, non-string keys), either parses or raises :class:`ReplyError`; nothing
else escapes (tests/agents/test_reply_fuzz.py feeds it 10,000 generated replies).
"""
from __future__ import annotations

import ast
import json
import math
import re

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


class ReplyError(ValueError):
    """The reply could not be turned into a legal action; the message is shown to the model."""


def _balanced_objects(text: str):
    """Yield each top-level balanced ``{...}`` substring (braces inside strings ignored)."""
    depth, start, quote, escape = 0, None, None, False
    for i, ch in enumerate(text):
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start:i + 1]


def json_object_complete(text: str) -> bool:
    """True once ``text`` holds a complete top-level ``{...}`` (used to stop generation early)."""
    return next(_balanced_objects(text), None) is not None


def _load(candidate: str):
    # ValueError covers JSONDecodeError and integers over Python's 4,300-digit conversion limit;
    # RecursionError, nesting thousands deep.
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    try:
        value = ast.literal_eval(candidate)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _as_text(reply) -> str:
    """The reply as text: bytes are decoded (undecodable bytes replaced); other types refused."""
    if isinstance(reply, (bytes, bytearray)):
        return bytes(reply).decode("utf-8", "replace")
    if reply is None or isinstance(reply, str):
        return reply
    raise ReplyError(f"the reply was a {type(reply).__name__}, not text; answer with a JSON object")


def extract_json_object(reply: str) -> dict:
    """The first JSON object in the reply (fenced, bare, or embedded in text)."""
    reply = _as_text(reply)
    if reply is None or not reply.strip():
        raise ReplyError("the reply was empty; answer with a JSON object")
    candidates = [m.group(1) for m in _FENCE.finditer(reply)] + [reply]
    for text in candidates:
        for candidate in _balanced_objects(text):
            value = _load(candidate)
            if isinstance(value, dict):
                return value
    if "{" in reply and next(_balanced_objects(reply), None) is None:
        raise ReplyError("the JSON object in the reply is not closed (missing '}')")
    raise ReplyError('no JSON object found in the reply; answer with {"action_type": ..., "argument": ...}')


def _schema_branch(info: dict, action_type: str):
    for branch in (info.get("action_schema") or {}).get("oneOf", []):
        if ((branch.get("properties") or {}).get("action_type") or {}).get("const") == action_type:
            return branch
    return None


def _check_argument(branch: dict, action_type: str, argument) -> None:
    arg = (branch.get("properties") or {}).get("argument") or {}
    required = "argument" in branch.get("required", ())
    empty = argument is None or (isinstance(argument, str) and not argument.strip())
    if required and empty:
        raise ReplyError(f'action type "{action_type}" needs an argument')
    if empty:
        return
    if arg.get("type") == "integer":
        text = str(argument).strip()
        try:
            if len(text) > 40:        # past any range the games use; int() of it would be slow
                raise ValueError
            value = int(text)
        except ValueError:
            raise ReplyError(f'the argument of "{action_type}" must be a whole number, not {repr(argument)[:60]}') from None
        lo, hi = arg.get("minimum"), arg.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ReplyError(f'the argument of "{action_type}" must be from {lo} to {hi}, not {value}')
    elif "enum" in arg and str(argument).strip() not in [str(v) for v in arg["enum"]]:
        raise ReplyError(f'the argument of "{action_type}" must be one of {", ".join(map(str, arg["enum"]))}')


# An integer argument past this many bits (about 38 digits) is no move of any game; str() of one
# past 4,300 digits raises ValueError, so huge literals (0xfff...) are refused here.
MAX_INT_BITS = 128


def _scalar(value) -> bool:
    """A string, a whole number (at most MAX_INT_BITS bits) or a finite float (what an action
    argument may hold)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value.bit_length() <= MAX_INT_BITS
    return isinstance(value, str) or (isinstance(value, float) and math.isfinite(value))


def _valid_argument(argument) -> bool:
    if argument is None or _scalar(argument):
        return True
    return isinstance(argument, (list, tuple)) and all(_scalar(item) for item in argument)


def _action_payload(payload: dict) -> dict:
    """The action of a think-then-act reply (``{"reasoning": ..., "action": {...}}``), or the reply."""
    inner = payload.get("action")
    if "action_type" not in payload and isinstance(inner, dict):
        return inner
    return payload


def reply_reasoning(reply) -> str:
    """The ``reasoning`` text of a think-then-act reply ("" when there is none)."""
    try:
        payload = extract_json_object(reply)
    except ReplyError:
        return ""
    reasoning = payload.get("reasoning")
    return reasoning if isinstance(reasoning, str) else ""


def parse_reply(reply: str, info: dict) -> dict:
    """``{"action_type": <canonical type>, "argument": ...}`` from a reply, validated against
    ``info["action_types"]`` (and, where the schema says, the argument's type and range)."""
    payload = _action_payload(extract_json_object(reply))
    action_type = payload.get("action_type")
    if not isinstance(action_type, str) or not action_type.strip():
        raise ReplyError('the JSON object needs an "action_type" string')
    legal = info.get("action_types") or []
    by_fold = {t.casefold(): t for t in legal}
    canonical = by_fold.get(action_type.strip().casefold())
    if legal and canonical is None:
        raise ReplyError(f'unknown action type "{action_type[:40]}"; choose one of: {", ".join(legal)}')
    canonical = canonical or action_type.strip()
    argument = payload.get("argument", "")
    if not _valid_argument(argument):
        raise ReplyError('"argument" must be a string, a number (under 39 digits) or a list of them')
    if isinstance(argument, tuple):
        argument = list(argument)
    branch = _schema_branch(info, canonical)
    if branch is not None:
        arg_schema = (branch.get("properties") or {}).get("argument") or {}
        if "argument" not in branch.get("required", ()) and arg_schema.get("maxLength") == 0:
            argument = ""    # the action takes no argument: ignore one the model added anyway
        _check_argument(branch, canonical, argument)
    return {"action_type": canonical, "argument": "" if argument is None else argument}


def action_string(action: dict) -> str:
    """The string handed to the env: canonical JSON (the env's grammar parses it strictly)."""
    return json.dumps({"action_type": action["action_type"], "argument": action.get("argument", "")},
                      ensure_ascii=False)
