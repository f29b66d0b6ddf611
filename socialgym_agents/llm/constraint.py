"""Replies legal by construction: every JSON reply a seat may give, as a character automaton.

:func:`reply_grammar` turns a seat's info into a :class:`ReplyGrammar`, the set of JSON replies
``{"action_type": ..., "argument": ...}`` that parse to a legal action:

- when the phase's legal actions are a finite list (``info["legal_action_list"]``), exactly one
  reply string per legal action (so cross-argument rules such as "all different" hold);
- otherwise one pattern per branch of ``info["action_schema"]``: fixed text, a choice among
  enum values or integers, and bounded free text (``"say"``: up to ``maxLength`` characters, no
  quote, backslash or control character, first character not a space; a ``pattern`` of
  ``^[^\\s,]+$`` means a single word) and integer arrays whose values must sum to ``x-sum``.

The grammar is backend-agnostic: it only knows characters. :mod:`socialgym_agents.llm.guided` walks it
over a tokenizer's vocabulary to mask logits; :func:`ReplyGrammar.json_schema` gives servers the
same set as an OpenAI ``response_format`` and :func:`to_gbnf` as a llama.cpp GBNF grammar. Tests
check that every string the automaton accepts parses to a legal action.

Think-then-act (:func:`thinking_grammar`): ``{"reasoning": "<free text>", "action": <reply>}``,
the reasoning one free-text piece shared by every action pattern (closed after ``think``
tokens by the local decoder, ``FreeText.max_tokens``), then any legal reply.

The automaton is a small NFA: a pattern is a list of *pieces* (:class:`Literals`,
:class:`FreeText`, :class:`IntArray`), a state is a set of threads ``(pattern, piece, piece
state)``, and a piece that may end hands over to the next piece without consuming a character.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

END = ""          # trie key marking the end of a literal
INT_ENUM_LIMIT = 2000
WORD_PATTERN = r"^[^\s,]+$"
# Characters a word argument may not contain: the env splits words at whitespace and commas and
# strips this punctuation from their edges (agents may wrap a word in quotes or brackets).
_WORD_BREAKERS = set(" \t\n\r,\"'`.;:!?()[]{}<>*")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _trie(strings) -> dict:
    root: dict = {}
    for text in strings:
        node = root
        for ch in text:
            node = node.setdefault(ch, {})
        node[END] = {}
    return root


# ----------------------------------------------------------------------------- pieces
@dataclass(frozen=True, eq=False)
class Literals:
    """One string out of a finite set (stored as a character trie; the state is a trie node)."""

    strings: tuple
    trie: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "trie", _trie(self.strings))

    def start(self):
        return self.trie

    def step(self, node, ch):
        return node.get(ch)

    def done(self, node) -> bool:
        return END in node

    def shortest_rest(self, node) -> str:
        """The shortest completion from ``node`` (breadth-first)."""
        frontier = [(node, "")]
        while frontier:
            nxt = []
            for current, text in frontier:
                if END in current:
                    return text
                nxt.extend((child, text + ch) for ch, child in current.items() if ch != END)
            frontier = nxt
        return ""


@dataclass(frozen=True)
class FreeText:
    """The inside of a JSON string: 1..max_chars safe characters (state: characters so far).
    ``max_tokens``: the local decoder closes it after that many generated tokens (reasoning)."""

    max_chars: int
    word: bool = False
    max_tokens: int = 0

    def start(self):
        return 0

    def allows(self, ch: str, count: int) -> bool:
        if count >= self.max_chars or ch in '"\\' or ord(ch) < 32 or ch == "\x7f" or ch == "\ufffd":
            return False
        if self.word:
            return ch not in _WORD_BREAKERS and not ch.isspace()
        return not (count == 0 and ch.isspace())

    def step(self, count, ch):
        return count + 1 if self.allows(ch, count) else None

    def done(self, count) -> bool:
        return count >= 1

    def shortest_rest(self, count) -> str:
        return "" if count else "x"


@dataclass(frozen=True)
class IntArray:
    """``[a, b, ...]``: ``length`` integers in [low, high], summing to ``total`` when given.
    State: (values so far, digits of the current value, literal characters still owed), or the
    string "closed" once the final "]" was read."""

    low: int
    high: int
    length: int
    total: Optional[int] = None

    def start(self):
        return ((), "", "[")

    def _feasible(self, values: tuple, digits: str) -> bool:
        """Some value starting with ``digits`` keeps the array completable."""
        left = self.length - len(values) - 1          # values after this one
        used = sum(values)
        for v in range(self.low, self.high + 1):
            if digits and not str(v).startswith(digits):
                continue
            if self.total is not None:
                rest = self.total - used - v
                if not left * self.low <= rest <= left * self.high:
                    continue
            return True
        return False

    def step(self, state, ch):
        if state == "closed":
            return None
        values, digits, owed = state
        if owed:
            return (values, digits, owed[1:]) if ch == owed[0] else None
        if ch.isdigit():
            candidate = digits + ch
            if (digits == "0") or not self._feasible(values, candidate):
                return None
            return (values, candidate, "")
        if not digits:
            return None
        value = int(digits)
        if not (self.low <= value <= self.high and self._completes(values, value)):
            return None
        done = values + (value,)
        if ch == "," and len(done) < self.length:
            return (done, "", " ")
        if ch == "]" and len(done) == self.length and (self.total is None or sum(done) == self.total):
            return "closed"
        return None

    def _completes(self, values: tuple, value: int) -> bool:
        if self.total is None:
            return True
        left = self.length - len(values) - 1
        rest = self.total - sum(values) - value
        return left * self.low <= rest <= left * self.high

    def done(self, state) -> bool:
        return state == "closed"

    def next_chars(self, state) -> set:
        if state == "closed":
            return set()
        owed = state[2]
        return {owed[0]} if owed else set("0123456789,]")

    def shortest_rest(self, state) -> str:
        if state == "closed":
            return ""
        values, digits, owed = state
        out = owed
        values = list(values)
        if digits:
            value = next(v for v in range(self.low, self.high + 1) if str(v).startswith(digits)
                         and self._completes(tuple(values), v))
            out += str(value)[len(digits):]
            values.append(value)
            out += ", " if len(values) < self.length else "]"
        while len(values) < self.length:
            value = next(v for v in range(self.low, self.high + 1) if self._completes(tuple(values), v))
            values.append(value)
            out += str(value) + (", " if len(values) < self.length else "]")
        return out


# ----------------------------------------------------------------------------- the automaton
@dataclass(frozen=True)
class Thread:
    pattern: int
    piece: int
    state: object


class ReplyGrammar:
    """The legal JSON replies of one decision. States are tuples of threads (hashable via ids)."""

    def __init__(self, patterns: list, finite: Optional[list] = None, action: Optional["ReplyGrammar"] = None):
        self.patterns = [tuple(p) for p in patterns]
        self.finite = finite      # the reply strings, when the set is a finite list
        self.action = action      # think-then-act: the grammar of the action after the reasoning

    # -- stepping
    def _close(self, threads: list) -> list:
        """Add the hand-over to the next piece for every thread whose piece may end."""
        out = []
        for thread in threads:
            out.append(thread)
            pieces = self.patterns[thread.pattern]
            if pieces[thread.piece].done(thread.state) and thread.piece + 1 < len(pieces):
                nxt = pieces[thread.piece + 1]
                out.append(Thread(thread.pattern, thread.piece + 1, nxt.start()))
        return out

    def start(self) -> tuple:
        return tuple(self._close([Thread(i, 0, p[0].start()) for i, p in enumerate(self.patterns)]))

    def step(self, state: tuple, ch: str) -> tuple:
        moved = []
        for thread in state:
            piece = self.patterns[thread.pattern][thread.piece]
            nxt = piece.step(thread.state, ch)
            if nxt is not None:
                moved.append(Thread(thread.pattern, thread.piece, nxt))
        return tuple(self._close(moved))

    def advance(self, state: tuple, text: str) -> tuple:
        for ch in text:
            state = self.step(state, ch)
            if not state:
                return ()
        return state

    def accepts(self, text: str) -> bool:
        return self.finished(self.advance(self.start(), text))

    def finished(self, state: tuple) -> bool:
        """A complete reply: some thread is at the end of its last piece."""
        return any(t.piece == len(self.patterns[t.pattern]) - 1
                   and self.patterns[t.pattern][t.piece].done(t.state) for t in state)

    def forced_prefix(self) -> str:
        """The characters every legal reply starts with."""
        state, out = self.start(), ""
        while state and not self.finished(state):
            chars = set()
            for thread in state:
                piece = self.patterns[thread.pattern][thread.piece]
                if not isinstance(piece, Literals):
                    return out
                chars.update(k for k in thread.state if k != END)
            if len(chars) != 1:
                return out
            ch = chars.pop()
            out += ch
            state = self.step(state, ch)
        return out

    def determined_rest(self, state: tuple) -> Optional[str]:
        """The rest of the reply when only one remains from ``state`` (fixed text to the end:
        ``erate", "argument": ""}`` once ``{"action_type": "coop`` is written), else None."""
        rest = ""
        while True:
            live = [t for t in state if self._can_continue(t)]
            if self.finished(state):
                return rest if not live else None      # it may end here or go on
            if not live or any(not isinstance(self._piece(t), Literals) for t in live):
                return None
            chars = {k for t in live for k in t.state if k != END}
            if len(chars) != 1:
                return None
            ch = chars.pop()
            rest += ch
            state = self.step(state, ch)

    def next_chars(self, state: tuple) -> set:
        """The characters that may follow, free-text characters left out."""
        chars: set = set()
        for thread in state:
            piece = self.patterns[thread.pattern][thread.piece]
            if isinstance(piece, Literals):
                chars.update(k for k in thread.state if k != END)
            elif isinstance(piece, IntArray):
                chars.update(piece.next_chars(thread.state))
        return chars

    def free_text(self, state: tuple) -> Optional[tuple]:
        """(FreeText piece, count) when the one thread that can still move is inside a free-text
        piece (a finished literal that handed over to it does not count), else None."""
        live = [t for t in state if not (self._piece(t).done(t.state) and not self._can_continue(t))]
        free = [t for t in live if isinstance(self._piece(t), FreeText)]
        if not free or any(not isinstance(self._piece(t), (FreeText, Literals)) for t in live):
            return None
        # several threads may be in one shared piece (the reasoning before every action pattern)
        if any(self._piece(t) is not self._piece(free[0]) or t.state != free[0].state for t in free):
            return None
        closers = {(t.pattern, t.piece + 1) for t in free}
        # besides the free text, only the threads that would close it may be live
        if any((t.pattern, t.piece) not in closers for t in live if t not in free):
            return None
        return self._piece(free[0]), free[0].state

    def _piece(self, thread: Thread):
        return self.patterns[thread.pattern][thread.piece]

    def _can_continue(self, thread: Thread) -> bool:
        piece = self._piece(thread)
        if isinstance(piece, Literals):
            return any(k != END for k in thread.state)
        if isinstance(piece, IntArray):
            return bool(piece.next_chars(thread.state))
        return True

    def completion(self, state: tuple) -> str:
        """A shortest way to finish from ``state`` (used to close a reply that ran out of budget)."""
        best = None
        for thread in state:
            pieces = self.patterns[thread.pattern]
            text = pieces[thread.piece].shortest_rest(thread.state)
            for piece in pieces[thread.piece + 1:]:
                text += piece.shortest_rest(piece.start())
            if best is None or len(text) < len(best):
                best = text
        return best or ""

    def closing(self, state: tuple) -> str:
        """From inside free text: the shortest way to close it (no more free characters)."""
        for thread in state:
            pieces = self.patterns[thread.pattern]
            if isinstance(pieces[thread.piece], FreeText) and thread.state >= 1:
                return "".join(p.shortest_rest(p.start()) for p in pieces[thread.piece + 1:])
        return self.completion(state)

    def json_schema(self, info: dict) -> dict:
        """The same set as a JSON schema (for servers' structured output)."""
        if self.action is not None:
            reasoning = next(p for p in self.patterns[0] if isinstance(p, FreeText))
            return {"type": "object", "properties": {
                "reasoning": {"type": "string", "minLength": 1, "maxLength": reasoning.max_chars},
                "action": self.action.json_schema(info)}, "required": ["reasoning", "action"]}
        # Each branch is a closed object with both keys required: schema-to-grammar converters
        # (llama.cpp's, llama-cpp-python's) build a union from the branches alone, so a
        # "required" beside "anyOf" would leave every key optional and allow "{}".
        if self.finite is not None:
            return {"anyOf": [_closed({k: {"const": v} for k, v in json.loads(s).items()}) for s in self.finite]}
        schema = info.get("action_schema") or {}
        branches = schema.get("oneOf")
        if not branches:
            return dict(schema or {"type": "object"})
        return {"oneOf": [_closed(b.get("properties") or {}) for b in branches]}


def _closed(properties: dict) -> dict:
    return {"type": "object", "properties": properties, "additionalProperties": False,
            "required": [k for k in ("action_type", "argument") if k in properties]}


# ----------------------------------------------------------------------------- building
def _branches(info: dict) -> list:
    out = []
    for branch in (info.get("action_schema") or {}).get("oneOf", []):
        action_type = ((branch.get("properties") or {}).get("action_type") or {}).get("const")
        if action_type is not None:
            out.append((action_type, branch))
    return out


def _argument_schema(branch: dict) -> Optional[dict]:
    """None when the action takes no argument."""
    arg = (branch.get("properties") or {}).get("argument")
    if arg is None or "argument" not in branch.get("required", ()) or arg.get("maxLength") == 0:
        return None
    return arg


def _scalar_values(arg: dict) -> Optional[list]:
    """The JSON texts of a finite scalar argument, or None when it is free text."""
    if "enum" in arg:
        return [_dumps(v) for v in arg["enum"]]
    if arg.get("type") == "integer":
        lo, hi = arg.get("minimum"), arg.get("maximum")
        if lo is None or hi is None or hi - lo >= INT_ENUM_LIMIT:
            raise ValueError(f"cannot constrain an integer argument without a small range: {arg}")
        return [str(v) for v in range(lo, hi + 1)]
    return None


def _free(arg: dict, max_chars: int) -> FreeText:
    limit = min(int(arg.get("maxLength") or max_chars), max_chars)
    return FreeText(max(1, limit), word=arg.get("pattern") == WORD_PATTERN)


def _cross(prefixes: list, options: list, limit: int = 4000) -> Optional[list]:
    if len(prefixes) * len(options) > limit:
        return None
    return [p + o for p in prefixes for o in options]


def _branch_pattern(action_type: str, branch: dict, max_chars: int) -> list:
    """The pieces of one action type's replies: literals, free text, integer arrays."""
    head = '{"action_type": ' + _dumps(action_type) + ', "argument": '
    arg = _argument_schema(branch)
    if arg is None:
        return [Literals((head + '""}',))]
    if arg.get("type") == "array":
        return _array_pattern(head, arg, max_chars)
    values = _scalar_values(arg)
    if values is not None:
        return [Literals(tuple(head + v + "}" for v in values))]
    return [Literals((head + '"',)), _free(arg, max_chars), Literals(('"}',))]


def _array_pattern(head: str, arg: dict, max_chars: int) -> list:
    """An array argument's pieces: integers as one :class:`IntArray`, else item by item, the
    finite items' values crossed into literals while the combinations stay few."""
    items = arg.get("items") or []
    if items and all(i.get("type") == "integer" and "enum" not in i for i in items):
        lo = min(i.get("minimum", 0) for i in items)
        hi = max(i.get("maximum", 0) for i in items)
        return [Literals((head,)), IntArray(lo, hi, len(items), arg.get("x-sum")), Literals(("}",))]
    pieces: list = []
    current = [head + "["]
    for index, item in enumerate(items):
        sep = ", " if index + 1 < len(items) else "]}"
        values = _scalar_values(item)
        if values is None:
            pieces += [Literals(tuple(c + '"' for c in current)), _free(item, max_chars)]
            current = ['"' + sep]
            continue
        options = [v + sep for v in values]
        crossed = _cross(current, options)
        if crossed is None:     # too many combinations: cut the literal here
            pieces.append(Literals(tuple(current)))
            crossed = options
        current = crossed
    pieces.append(Literals(tuple(current)))
    return pieces


def _finite_reply(entry: str, branches: dict) -> str:
    """The JSON reply of one ``legal_action_list`` entry ("vote Alice", "bid 3 5")."""
    action_type, _, rest = entry.partition(" ")
    branch = branches.get(action_type)
    arg = _argument_schema(branch) if branch is not None else ({} if rest else None)
    if arg is None:
        argument = ""
    elif arg.get("type") == "array":
        parts = rest.split()
        items = arg.get("items") or []
        argument = [int(p) if i < len(items) and items[i].get("type") == "integer" else p
                    for i, p in enumerate(parts)]
    elif arg.get("type") == "integer":
        argument = int(rest)
    else:
        argument = rest
    return '{"action_type": ' + _dumps(action_type) + ', "argument": ' + _dumps(argument) + "}"


def reply_grammar(info: dict, max_text_chars: int = 600) -> ReplyGrammar:
    """The legal replies of one decision (see the module docstring)."""
    branches = _branches(info)
    legal = info.get("legal_action_list")
    if legal:
        by_type = dict(branches)
        replies = list(dict.fromkeys(_finite_reply(entry, by_type) for entry in legal))
        return ReplyGrammar([[Literals(tuple(replies))]], finite=replies)
    if not branches:
        raise ValueError("the seat's info has neither a legal_action_list nor an action_schema")
    patterns = [_branch_pattern(t, b, max_text_chars) for t, b in branches]
    finite = None
    if all(len(p) == 1 and isinstance(p[0], Literals) for p in patterns):
        finite = [s for p in patterns for s in p[0].strings]
        patterns = [[Literals(tuple(finite))]]
    return ReplyGrammar(patterns, finite=finite)


REASONING_HEAD = '{"reasoning": "'
REASONING_TAIL = '", "action": '
CHARS_PER_TOKEN = 6     # room in characters for a reasoning of ``think`` tokens (tokens close it first)


def thinking_grammar(action: ReplyGrammar, think: int) -> ReplyGrammar:
    """``{"reasoning": "<up to think tokens>", "action": <a reply of action>}``: one shared
    reasoning piece, then every pattern of ``action``."""
    reasoning = FreeText(max(1, think * CHARS_PER_TOKEN), max_tokens=think)
    head = [Literals((REASONING_HEAD,)), reasoning, Literals((REASONING_TAIL,))]
    return ReplyGrammar([head + list(p) + [Literals(("}",))] for p in action.patterns], action=action)


# ----------------------------------------------------------------------------- GBNF
def _gbnf_literal(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 32 or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# What FreeText allows, as GBNF character classes (control characters, quote, backslash out).
_GBNF_TEXT = r'[^"\\\x00-\x1f\x7f]'
_GBNF_TEXT_FIRST = r'[^"\\\x00-\x20\x7f]'
_GBNF_WORD = r"""[^"\\\x00-\x20\x7f,'`.;:!?()\[\]{}<>*]"""


def _gbnf_piece(piece, rules: dict) -> str:
    """The GBNF expression of one piece (named rules for free text and integers go in ``rules``)."""
    if isinstance(piece, Literals):
        return "(" + " | ".join(_gbnf_literal(t) for t in sorted(piece.strings)) + ")"
    if isinstance(piece, FreeText):
        name = f"text{len(rules)}"
        first, rest = (_GBNF_WORD, _GBNF_WORD) if piece.word else (_GBNF_TEXT_FIRST, _GBNF_TEXT)
        rules[name] = f"{first} {rest}{{0,{piece.max_chars - 1}}}" if piece.max_chars > 1 else first
        return name
    if isinstance(piece, IntArray):
        # the sum constraint (x-sum) has no GBNF form: a reply that misses it is re-asked
        name = f"int{len(rules)}"
        rules[name] = "(" + " | ".join(f'"{v}"' for v in range(piece.low, piece.high + 1)) + ")"
        return '"[" ' + ' ", " '.join([name] * piece.length) + ' "]"'
    raise TypeError(f"no GBNF for {type(piece).__name__}")


def to_gbnf(grammar: ReplyGrammar) -> str:
    """The grammar in llama.cpp's GBNF (``root`` rule): the same replies, except that an integer
    array's required sum is not enforced (the policy re-asks)."""
    rules: dict = {}
    alternatives = [" ".join(_gbnf_piece(piece, rules) for piece in pattern) for pattern in grammar.patterns]
    lines = ["root ::= " + " | ".join(f"({a})" for a in alternatives)]
    lines += [f"{name} ::= {body}" for name, body in rules.items()]
    return "\n".join(lines) + "\n"


def finite_replies(info: dict) -> Optional[list]:
    """Every legal reply string when the set is finite (the scoring mode's candidates), else None."""
    try:
        return reply_grammar(info).finite
    except ValueError:
        return None
