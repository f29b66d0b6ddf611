"""The paper's game-play prompt (Appendix E), rendered from ``env.prompt_parts(agent)`` + info.

Template (the paper's slots; the description comes before the role-play line here, as it is
the same for every seat; ``status`` is our addition, shown after the history)::

    {playbook}                                   <- the "reflection" slot, empty without one
    Here is the description of the game: {description}
    Imagine you are playing the game as {agent}.
    Your ({agent}'s) goal: {goal}
    {secret}
    Here is the context of the interaction:
    {history}
    {status}
    Your available action type(s): [{action_list}].
    {action_instructions}
    Please only generate a JSON string including the action type and the argument.
    Your action should follow the given format:
    {format_instructions}

The static parts come first and the history grows at its end, so consecutive prompts of one
seat share a long token prefix; the local backend reuses its KV cache for that prefix.

Turn layout (``prompt=turns``, the default): the part after the history (status, actions,
format) changes every turn, which cuts that shared prefix short. So a seat's first decision is
the whole prompt above as one user message, and each later decision appends the seat's previous
reply (assistant message) and one user message with only what is new (:func:`render_turn`): the
history lines since its last decision, then the status, action and format block. Every turn's
tokens then extend the previous turn's tokens, and the KV cache covers everything but the new
message. The conversation starts over (whole prompt again) when the static part changes or it
no longer fits the context.

Context overflow: :func:`fit_prompt` drops the OLDEST history lines, replacing them with the
marker ``[... N earlier messages omitted ...]``, until the prompt fits the budget the backend
gives (its context length minus the room kept for the reply and the re-asks). Lines are dropped
in chunks (``OMIT_CHUNK``) so that the prompt prefix stays stable for several turns.
"""
from __future__ import annotations

import json
from typing import Callable, Optional, Sequence

OMIT_CHUNK = 16
OMIT_MARKER = "[... {n} earlier messages omitted ...]"


def _argument_format(branch: dict) -> str:
    """How the argument of one action type is written, from its JSON-schema branch."""
    arg = (branch.get("properties") or {}).get("argument") or {}
    if "argument" not in branch.get("required", ()) or arg.get("maxLength") == 0:
        return '""'
    if "enum" in arg:
        return "one of " + ", ".join(json.dumps(v) for v in arg["enum"])
    if arg.get("type") == "integer":
        lo, hi = arg.get("minimum"), arg.get("maximum")
        return f"<integer from {lo} to {hi}>" if lo is not None and hi is not None else "<integer>"
    if arg.get("type") == "array":
        return "<" + " ".join(_argument_format({"required": ["argument"], "properties": {"argument": item}})
                              for item in arg.get("items", [])) + ">"
    if arg.get("maxLength"):
        return f'"<text, at most {arg["maxLength"]} characters>"'
    return '"<text>"'


def format_instructions(info: dict) -> str:
    """One JSON line per legal action type: ``{"action_type": "propose", "argument": <integer ...>}``."""
    schema = info.get("action_schema") or {}
    lines = []
    for branch in schema.get("oneOf", []):
        action_type = ((branch.get("properties") or {}).get("action_type") or {}).get("const")
        if action_type is None:
            continue
        lines.append(f'{{"action_type": {json.dumps(action_type)}, "argument": {_argument_format(branch)}}}')
    if not lines:
        lines = ['{"action_type": "<one of the action types above>", "argument": "<argument or empty>"}']
    return "\n".join(lines)


def render_head(parts: dict, playbook: Optional[str] = None) -> list:
    """The static lines: playbook, role-play line, description, goal, secret."""
    agent = parts.get("agent", "")
    lines = []
    if playbook:
        lines += [playbook.strip(), ""]
    # The description before the role-play line: it is the same for every seat of a game, so
    # the local backend encodes it once and every seat's first prompt reuses it.
    lines.append(f"Here is the description of the game: {parts.get('description', '')}")
    lines.append(f"Imagine you are playing the game as {agent}.")
    lines.append(f"Your ({agent}'s) goal: {parts.get('goal', '')}")
    secret = parts.get("secret") or []
    if isinstance(secret, str):
        secret = [secret]
    lines.extend(secret)
    return lines


def render_prompt(parts: dict, info: dict, playbook: Optional[str] = None, omitted: int = 0) -> str:
    """The Appendix-E prompt for one decision. ``omitted`` oldest history lines are replaced by
    the omission marker."""
    history = list(parts.get("history") or [])
    if omitted:
        omitted = min(omitted, len(history))
        history = [OMIT_MARKER.format(n=omitted)] + history[omitted:]
    lines = render_head(parts, playbook)
    lines.append("Here is the context of the interaction:")
    lines.extend(history or ["(nothing yet)"])
    return "\n".join(lines + render_action_block(parts, info))


SAME_ACTIONS = "Your available actions and the reply format are as shown earlier in this conversation."


def render_turn(parts: dict, actions: list, new_lines: list, shown: Sequence[list] = ()) -> str:
    """A later decision's user message in the turn layout: the new history lines, then the
    status and ``actions`` (:func:`render_actions`). If an earlier message of this conversation
    showed the same actions (``shown``), one line refers to them instead: in talk phases that
    block was most of every turn's new tokens."""
    lines = ["Here is what happened since your last action:"]
    lines.extend(new_lines or ["(nothing new)"])
    return "\n".join(lines + render_status(parts) + ([SAME_ACTIONS] if actions in shown else actions))


def render_status(parts: dict) -> list:
    status = parts.get("status") or []
    return ["Current status: " + " ".join(status)] if status else []


def render_action_block(parts: dict, info: dict) -> list:
    """The lines after the history: status, action types and instructions, JSON format."""
    return render_status(parts) + render_actions(info)


def render_actions(info: dict) -> list:
    """Action types and instructions, the legal list, the JSON format lines."""
    lines = []
    action_types = info.get("action_types") or []
    lines.append(f"Your available action type(s): [{', '.join(action_types)}].")
    instructions = (info.get("instructions") or "").strip()
    if instructions:
        lines.append(instructions)
    lines.extend(f"- {legal}" for legal in info.get("legal_actions") or [])
    lines.append("Please only generate a JSON string including the action type and the argument.")
    lines.append("Your action should follow the given format:")
    lines.append(format_instructions(info))
    return lines


def fit_prompt(parts: dict, info: dict, playbook: Optional[str], fits: Callable[[str], bool]) -> tuple[str, int]:
    """The prompt with as few oldest history lines dropped (in chunks) as needed for ``fits``;
    returns (prompt, number of history lines omitted). If even an empty history does not fit,
    the prompt with every history line omitted is returned (the backend then truncates)."""
    prompt = render_prompt(parts, info, playbook)
    if fits(prompt):
        return prompt, 0
    total = len(parts.get("history") or [])
    # Smallest multiple of OMIT_CHUNK (or all lines) that fits: binary search over chunk counts.
    chunks = -(-total // OMIT_CHUNK)
    lo, hi = 1, chunks
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        omitted = min(mid * OMIT_CHUNK, total)
        candidate = render_prompt(parts, info, playbook, omitted)
        if fits(candidate):
            best, hi = (candidate, omitted), mid - 1
        else:
            lo = mid + 1
    if best is None:
        return render_prompt(parts, info, playbook, total), total
    return best
