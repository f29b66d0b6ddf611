"""The JSON form of an action (``{"action_type": "vote", "argument": "Alice"}``) split into its
keyword and its argument text, with the nesting capped before the JSON parser sees it."""
from __future__ import annotations

import json

from .action import ActionError
from .text_safety import encodable

MAX_JSON_DEPTH = 8          # {"action_type": ..., "argument": [...]} needs 2


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


def split_json(text: str) -> tuple[str, str]:
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
