"""The legal actions of one agent at one decision (:class:`Grammar`): parsing any string,
the fast lane's look-up, sampling and enumeration over the decision's specs."""
from __future__ import annotations

import random
from typing import Optional, Sequence

from .action import Action, ActionError
from .arguments import clean_token, next_token
from .fast_lane import cached_description, cached_enumeration, cached_texts, grammar_facts, lookup_key
from .json_form import split_json
from .spec import ActionSpec
from .text_safety import encodable, fold

# Caps applied before parsing (the shared rules, "Invalid actions": junk never crashes an env).
MAX_ACTION_CHARS = 4000     # the longest legal action is a 600-character talk line in JSON


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
        self._facts = grammar_facts(self.specs)
        self.by_type = self._facts.by_type

    # -- text for agents -------------------------------------------------------------
    def legal_actions(self) -> list[str]:
        facts = self._facts
        if facts.descriptions is None:
            facts.descriptions = [cached_description(spec) for spec in self.specs]
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
        if not issubclass(type(raw), str):     # type(): __class__ can claim str, isinstance believes it
            raise ActionError(f"an action must be a string, not {type(raw).__name__}")
        text = encodable(raw).strip()
        if not text:
            raise ActionError("empty action")
        if len(text) > MAX_ACTION_CHARS:
            # Capped before any parsing: no over-long integer or deep JSON reaches the parsers.
            raise ActionError(f"action too long: {len(text)} characters, at most {MAX_ACTION_CHARS}")
        if text.startswith("{"):
            action_type, rest = split_json(text)
        else:
            action_type, rest = next_token(text)
            action_type = clean_token(action_type)
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
        if type(raw) is not str or not self._facts.shared:      # type(): __class__ can lie
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
            legal[position] = cached_enumeration(self.specs[position])
        return legal[position]

    def _texts(self):
        facts = self._facts
        if facts.texts is None:
            out = []
            for position, spec in enumerate(self.specs):
                texts = cached_texts(spec, self._legal(position))
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
