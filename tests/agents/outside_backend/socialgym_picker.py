"""A model backend from outside Social Gym: ``picker:first`` and ``picker:seeded``.

It loads no model. It answers every decision with a legal move read off the JSON schema of
legal replies that the policy sends with each request (the ``response_format`` a server would
get): the first legal reply, or one drawn with the request's sampling seed. A starting point
for a real backend (a new server protocol, a local runtime): replace ``_answer``.
"""
from __future__ import annotations

import json
import random

from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.backends import BackendKind

STRATEGIES = ("first", "seeded")


class PickerBackend:
    """Implements :class:`socialgym_agents.llm.backends.Backend`."""

    kind = "picker"

    def __init__(self, target: str, config):
        self.model_name = target             # recorded in every decision's meta
        self.strategy = target
        self.config = config                 # the spec's options (LLMConfig)
        self.requests = 0

    def complete(self, items) -> list:
        """One Reply per Completion, in order; a failed request is its exception instead."""
        replies = []
        for item in items:
            self.requests += 1
            try:
                replies.append(Reply(self._answer(item), usage={"completion_tokens": 0}))
            except ValueError as err:        # fails this seat's decision, not the batch
                replies.append(err)
        return replies

    def fits(self, messages: list, share: float = 1.0) -> bool:
        """Every prompt fits: the picker reads no prompt."""
        return True

    def _answer(self, item) -> str:
        schema = item.schema or {}
        if "reasoning" in schema.get("properties", {}):          # think=N: answer in that shape
            action = json.loads(self._pick(schema["properties"]["action"], item.sample_seed))
            return json.dumps({"reasoning": "picked", "action": action})
        return self._pick(schema, item.sample_seed)

    def _pick(self, schema: dict, seed: int) -> str:
        """A reply the schema allows: one of its branches, then each property's first value."""
        branches = schema.get("anyOf") or schema.get("oneOf") or [schema]
        branch = branches[0] if self.strategy == "first" else random.Random(seed).choice(branches)
        properties = branch.get("properties") or {}
        if "action_type" not in properties:
            raise ValueError(f"no action in the reply schema {json.dumps(schema)[:80]}")
        return json.dumps({key: _value(spec) for key, spec in properties.items()})


def _value(spec: dict):
    """The first value a JSON-schema property allows."""
    if "const" in spec:
        return spec["const"]
    if "enum" in spec:
        return spec["enum"][0]
    if spec.get("type") == "integer":
        return spec.get("minimum", 0)
    if spec.get("type") == "array":                           # a tuple, or minItems of one kind
        items = spec.get("prefixItems") or spec.get("items") or {}
        return [_value(s) for s in items] if isinstance(items, list) else [_value(items)] * spec.get("minItems", 1)
    return "ok"


def check(target: str, config) -> None:
    """Refuse a spec before any game starts (one line); load nothing here."""
    if target not in STRATEGIES:
        raise ValueError(f"picker needs a strategy: {', '.join('picker:' + s for s in STRATEGIES)} "
                         f"(got {target!r})")


# The registration: the factory and the check by "module:attr" (imported when a picker spec is
# checked or built), the spec's form for messages. Entry point: picker = "socialgym_picker:BACKEND".
BACKEND = BackendKind("picker", "socialgym_picker:PickerBackend", check="socialgym_picker:check",
                      form="picker:first|seeded[?options]")
