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

Compact template (``template=compact``): the same slots and the same two layouts in fewer
tokens, for constrained play, where the grammar of legal replies decides what can be written
and the reply-format text changes nothing that is legal. The role lines read "You are
{agent}. Your goal: {goal}", the secret, history and status lines are kept as they are (under
shorter headers), the action block is the game's instructions and the legal list (the action
types only when a game lists no legal actions), and the reply format is one line plus the
format line of each action type that takes an argument (what the argument is written as:
UCI moves, a number's range, a text's length). The paper's template (``template=paper``) stays
the default; the template is a spec option, so the two are two policies on a leaderboard.

Context overflow: :func:`fit_prompt` drops the OLDEST history lines, replacing them with the
marker ``[... N earlier messages omitted ...]``, until the prompt fits the budget the backend
gives (its context length minus the room kept for the reply and the re-asks). Lines are dropped
in chunks (``OMIT_CHUNK``) so that the prompt prefix stays stable for several turns.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
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


def _format_lines(info: dict, with_argument_only: bool = False) -> list:
    """One JSON line per legal action type: ``{"action_type": "propose", "argument": <integer ...>}``
    (``with_argument_only``: only the types that take an argument)."""
    schema = info.get("action_schema") or {}
    lines = []
    for branch in schema.get("oneOf", []):
        action_type = ((branch.get("properties") or {}).get("action_type") or {}).get("const")
        if action_type is None:
            continue
        argument = _argument_format(branch)
        if not (with_argument_only and argument == '""'):
            lines.append(f'{{"action_type": {json.dumps(action_type)}, "argument": {argument}}}')
    return lines


def format_instructions(info: dict) -> str:
    """One JSON line per legal action type: ``{"action_type": "propose", "argument": <integer ...>}``."""
    lines = _format_lines(info)
    if not lines:
        lines = ['{"action_type": "<one of the action types above>", "argument": "<argument or empty>"}']
    return "\n".join(lines)


@dataclass(frozen=True)
class Template:
    """The fixed wording of a prompt template: the lines that open the history, a later turn's
    message and the action block, and the placeholders. :data:`PAPER` is the paper's Appendix-E
    wording, :data:`COMPACT` the short one for constrained play (``template=`` in a spec)."""

    name: str
    context_line: str        # opens the history in a whole prompt
    turn_line: str           # opens a later turn's message (turn layout)
    nothing_yet: str         # an empty history
    nothing_new: str         # a turn with no new history line
    status_prefix: str
    actions_prefix: str      # how the action block's first line starts
    same_actions: str        # a later turn's stand-in for an action block shown before


PAPER = Template("paper", "Here is the context of the interaction:", "Here is what happened since your last action:",
                 "(nothing yet)", "(nothing new)", "Current status: ", "Your available action type(s): [",
                 "Your available actions and the reply format are as shown earlier in this conversation.")
COMPACT = Template("compact", "History:", "Since your last action:", "(none yet)", "(nothing new)", "Status: ",
                   "Actions:", "Actions: as shown before.")
TEMPLATES = {template.name: template for template in (PAPER, COMPACT)}
# The paper's wording under its old names (logged chats and their readers use them).
CONTEXT_LINE, TURN_LINE, SAME_ACTIONS = PAPER.context_line, PAPER.turn_line, PAPER.same_actions
NOTHING_YET, NOTHING_NEW = PAPER.nothing_yet, PAPER.nothing_new
COMPACT_REPLY = 'Reply as JSON: {"action_type": "<action>", "argument": "<argument or empty>"}'


def render_head(parts: dict, playbook: Optional[str] = None, template: Template = PAPER) -> list:
    """The static lines: playbook, description, role-play line, goal, secret."""
    agent = parts.get("agent", "")
    lines = []
    if playbook:
        lines += [playbook.strip(), ""]
    # The description before the role-play line: it is the same for every seat of a game, so
    # the local backend encodes it once and every seat's first prompt reuses it.
    if template is COMPACT:
        lines.append(f"Game: {parts.get('description', '')}")
        lines.append(f"You are {agent}. Your goal: {parts.get('goal', '')}")
    else:
        lines.append(f"Here is the description of the game: {parts.get('description', '')}")
        lines.append(f"Imagine you are playing the game as {agent}.")
        lines.append(f"Your ({agent}'s) goal: {parts.get('goal', '')}")
    secret = parts.get("secret") or []
    if isinstance(secret, str):
        secret = [secret]
    lines.extend(secret)
    return lines


def render_prompt(parts: dict, info: dict, playbook: Optional[str] = None, omitted: int = 0,
                  template: Template = PAPER) -> str:
    """The whole prompt for one decision (the Appendix-E one by default). ``omitted`` oldest
    history lines are replaced by the omission marker."""
    history = list(parts.get("history") or [])
    return compose_prompt(render_head(parts, playbook, template), history,
                          render_action_block(parts, info, template), min(omitted, len(history)), 0, template)


def compose_prompt(head: list, history: list, block: list, omitted: int = 0, already_omitted: int = 0,
                   template: Template = PAPER) -> str:
    """The whole prompt from its three parts: the ``head`` lines, the history (``history`` holds
    the lines after the first ``already_omitted``, which are gone), the ``block`` after it
    (status, actions, format). ``omitted`` (>= ``already_omitted``) oldest lines of the whole
    history are replaced by the omission marker."""
    shown = list(history[omitted - already_omitted:])
    if omitted:
        shown = [OMIT_MARKER.format(n=omitted)] + shown
    return "\n".join(list(head) + [template.context_line] + (shown or [template.nothing_yet]) + list(block))


def render_turn(parts: dict, actions: list, new_lines: list, shown: Sequence[list] = (),
                template: Template = PAPER) -> str:
    """A later decision's user message in the turn layout: the new history lines, then the
    status and ``actions`` (:func:`render_actions`). If an earlier message of this conversation
    showed the same actions (``shown``), one line refers to them instead: in talk phases that
    block was most of every turn's new tokens."""
    lines = [template.turn_line]
    lines.extend(new_lines or [template.nothing_new])
    return "\n".join(lines + render_status(parts, template)
                     + ([template.same_actions] if actions in shown else actions))


def render_status(parts: dict, template: Template = PAPER) -> list:
    status = parts.get("status") or []
    return [template.status_prefix + " ".join(status)] if status else []


def render_action_block(parts: dict, info: dict, template: Template = PAPER) -> list:
    """The lines after the history: status, action types and instructions, JSON format."""
    return render_status(parts, template) + render_actions(info, template)


def render_actions(info: dict, template: Template = PAPER) -> list:
    """Action types and instructions, the legal list, the JSON format lines (compact: the
    instructions, the legal list, one reply line and the format of the arguments)."""
    if template is COMPACT:
        return _compact_actions(info)
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


def _compact_actions(info: dict) -> list:
    """The compact action block: ``Actions: <instructions>``, the legal list (the action types
    when a game lists none), the reply line, and the format line of each type with an argument."""
    legal = info.get("legal_actions") or []
    first = " ".join(filter(None, [COMPACT.actions_prefix, (info.get("instructions") or "").strip()]))
    lines = [first]
    if legal:
        lines.extend(f"- {action}" for action in legal)
    else:
        lines.append(f"- one of: {', '.join(info.get('action_types') or [])}")
    return lines + [COMPACT_REPLY] + _format_lines(info, with_argument_only=True)


def fit_prompt(parts: dict, info: dict, playbook: Optional[str], fits: Callable[[str], bool],
               template: Template = PAPER) -> tuple[str, int]:
    """The prompt with as few oldest history lines dropped (in chunks) as needed for ``fits``;
    returns (prompt, number of history lines omitted). If even an empty history does not fit,
    the prompt with every history line omitted is returned (the backend then truncates)."""
    return fit_history(render_head(parts, playbook, template), list(parts.get("history") or []),
                       render_action_block(parts, info, template), fits, 0, template)


def fit_history(head: list, history: list, block: list, fits: Callable[[str], bool],
                already_omitted: int = 0, template: Template = PAPER) -> tuple[str, int]:
    """How the policy keeps a prompt within budget, in one place (:func:`fit_prompt` for the
    policy, :func:`trim_chat` for a logged chat a trainer must shorten): the
    :func:`compose_prompt` of the parts with the fewest oldest history lines omitted, in whole
    ``OMIT_CHUNK`` chunks of the whole history, for which ``fits`` holds; (prompt, lines
    omitted). Nothing fits: every line omitted."""
    total = already_omitted + len(history)
    prompt = compose_prompt(head, history, block, already_omitted, already_omitted, template)
    if fits(prompt):
        return prompt, already_omitted
    # Smallest multiple of OMIT_CHUNK (or all lines) past what is gone that fits: binary search.
    lo, hi = already_omitted // OMIT_CHUNK + 1, -(-total // OMIT_CHUNK)
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        omitted = min(mid * OMIT_CHUNK, total)
        candidate = compose_prompt(head, history, block, omitted, already_omitted, template)
        if fits(candidate):
            best, hi = (candidate, omitted), mid - 1
        else:
            lo = mid + 1
    if best is None:
        return compose_prompt(head, history, block, total, already_omitted, template), total
    return best


_OMITTED = re.compile(re.escape(OMIT_MARKER).replace(r"\{n\}", r"(\d+)") + "$")
THINK_NOTE_PREFIX = "Think first, then act:"      # how the think-mode note the policy appends to a user turn starts


def _block_start(lines: list, template: Template = PAPER) -> int:
    """Where the lines after the history begin (status or actions), in a prompt's or a turn's
    lines after their first; len(lines) when absent."""
    for i, line in enumerate(lines):
        if line.startswith(template.status_prefix) or line.startswith(template.actions_prefix) \
                or line == template.same_actions:
            return i
    return len(lines)


def _template_of(first: list) -> Optional[Template]:
    """The template whose history header a chat's first message holds (None: another layout)."""
    return next((t for t in TEMPLATES.values() if t.context_line in first), None)


def parse_chat(messages: list) -> Optional[dict]:
    """The parts of a chat this policy laid out (either layout, either template; a re-asked
    decision's failed replies and re-asks after it): ``system`` (leading system messages),
    ``head``, ``history`` (the lines every message has shown, oldest first, after
    ``already_omitted`` gone ones), ``block`` (the current decision's status, actions and
    format, as a whole prompt shows them), ``tail`` (the messages after the current decision's)
    and ``template``. None for a chat of another layout."""
    leading = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
    system, rest = list(messages[:leading]), messages[leading:]
    if not rest or rest[0].get("role") != "user":
        return None
    first = rest[0]["content"].split("\n")
    template = _template_of(first)
    if template is None:
        return None
    at = first.index(template.context_line)
    head, after = first[:at], first[at + 1:]
    cut = _block_start(after, template)
    history, block = after[:cut], after[cut:]
    already_omitted = 0
    if history == [template.nothing_yet]:
        history = []
    elif history and _OMITTED.match(history[0]):
        already_omitted, history = int(_OMITTED.match(history[0]).group(1)), history[1:]
    actions = _actions_of(block, template)
    current = 0
    for index, message in enumerate(rest[1:], start=1):
        lines = message["content"].split("\n")
        if message.get("role") != "user" or lines[0] != template.turn_line:
            continue                           # replies, and re-asks of the current decision
        cut = _block_start(lines, template)
        new = lines[1:cut]
        history += [] if new == [template.nothing_new] else new
        block, current = lines[cut:], index
        if template.same_actions in block:     # the whole prompt shows the actions in full
            at = block.index(template.same_actions)
            block = block[:at] + actions + block[at + 1:]
        else:
            actions = _actions_of(block, template) or actions
    return {"system": system, "head": head, "history": history, "already_omitted": already_omitted,
            "block": block, "tail": rest[current + 1:], "template": template}


def _actions_of(block: list, template: Template = PAPER) -> list:
    """The action lines of a block (without its status and a think-mode note)."""
    lines = [line for line in block if not line.startswith(template.status_prefix)]
    if lines and lines[-1].startswith(THINK_NOTE_PREFIX):
        lines = lines[:-1]
    return lines


def trim_chat(messages: list, fits: Callable[[list], bool]) -> Optional[list]:
    """A logged chat of this policy shortened as the policy shortens its context: the whole
    prompt of the current decision (its head, every history line the chat has shown, its status,
    actions and format) with the fewest oldest history lines omitted (:func:`fit_history`) for
    which ``fits`` holds of the chat (system messages, that prompt, the re-asks after it). It is
    what the policy sends when it (re)starts a conversation at this decision within that budget.
    None for a chat of another layout, or when nothing fits."""
    parsed = parse_chat(messages)
    if parsed is None:
        return None

    def chat(prompt: str) -> list:
        return parsed["system"] + [{"role": "user", "content": prompt}] + parsed["tail"]
    prompt, _ = fit_history(parsed["head"], parsed["history"], parsed["block"], lambda p: fits(chat(p)),
                            parsed["already_omitted"], parsed["template"])
    return chat(prompt) if fits(chat(prompt)) else None
