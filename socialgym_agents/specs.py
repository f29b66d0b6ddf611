"""An agent spec, parsed once: ``kind[:name][?key=value&...]`` into a typed :class:`AgentSpec`.

The command line, the checks, the policy pool and the workers pass this value on; spec strings
are parsed where they enter (a CLI option, a public function given a string) and nowhere after.
``str(spec)`` is the canonical string logs and leaderboards carry: for every spec written the
canonical way (all of those in the docs) it is the text given, byte for byte.

| text                          | kind       | name             | argument | options              |
|-------------------------------|------------|------------------|----------|----------------------|
| ``scripted:random``           | scripted   | random           |          |                      |
| ``scripted:constant:defect``  | scripted   | constant         | defect   |                      |
| ``smollm2?temperature=0.7``   | smollm2    |                  |          | (temperature, 0.7)   |
| ``hf:/m?context=512``         | hf         | /m               |          | (context, 512)       |
| ``openai:gpt@http://h/v1``    | openai     | gpt@http://h/v1  |          |                      |
| ``human``                     | human      |                  |          |                      |

A scripted spec takes no options, so a constant action may hold ``?`` (``scripted:constant:ask?``).
Which kinds exist, and what each is (scripted, a model, a person), is not decided here:
:func:`socialgym_agents.registry.policy_kind` says so.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from socialgym_env.errors import SocialGymError

# How a spec is written; which kinds exist (and their own forms) is socialgym_agents.registry's to say.
SPEC_SYNTAX = "kind[:name][?key=value&...], e.g. scripted:random or smollm2?temperature=0.7"


class PolicySpecError(SocialGymError, ValueError):
    """A policy spec that names no policy; the message (one line) says what is wrong and what is valid."""


def split_options(query: str) -> tuple:
    """``"a=1&b=x"`` -> ``(("a", "1"), ("b", "x"))``, as written (not unquoted, so they print back
    byte for byte); an option without ``=`` is PolicySpecError. Empty items (``a=1&&b=2``) are
    skipped, as ``urllib.parse.parse_qsl`` skips them."""
    options = []
    for item in query.split("&"):
        if not item:
            continue
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise PolicySpecError(f"option {item!r} needs a key and a value: key=value")
        options.append((key, value))
    return tuple(options)


@dataclass(frozen=True)
class AgentSpec:
    """One policy spec: its ``kind`` (``scripted``, ``human``, a model backend's kind such as
    ``smollm2``, ``hf``, ``openai``, or a plugin's: :func:`socialgym_agents.registry.policy_kind`),
    ``name`` (the scripted strategy, the model, ``model@url``),
    ``argument`` (``scripted:constant``'s action) and ``options`` (``?key=value`` pairs as written)."""

    kind: str
    name: str = ""
    argument: str = ""
    options: tuple = ()

    @classmethod
    def parse(cls, text) -> "AgentSpec":
        """The spec ``text`` names; PolicySpecError (one line) when it is empty, has spaces around
        it or an option without a value. Unknown kinds parse; the checks reject them."""
        if not isinstance(text, str) or not text.strip():
            raise PolicySpecError(f"empty policy spec {text!r}; a spec is {SPEC_SYNTAX}")
        if text != text.strip():
            raise PolicySpecError(f"policy spec {text!r} has spaces around it; a spec is {SPEC_SYNTAX}")
        cut = min((i for i in (text.find(":"), text.find("?")) if i >= 0), default=len(text))
        kind, separator, rest = text[:cut], text[cut:cut + 1], text[cut + 1:]
        if separator == "?":           # smollm2?temperature=0.7: options straight after the kind
            rest = "?" + rest
        if kind == "scripted":
            name, _, argument = rest.partition(":")
            return cls(kind, name, argument)
        name, _, query = rest.partition("?")
        try:
            options = split_options(query)
        except PolicySpecError as err:
            raise PolicySpecError(f"{text}: {err}") from None
        return cls(kind, name, options=options)

    @classmethod
    def of(cls, spec) -> "AgentSpec":
        """``spec`` itself when it is an AgentSpec, else the parse of the string: public
        functions take either, and parse a string there, once."""
        return spec if isinstance(spec, cls) else cls.parse(spec)

    @property
    def query(self) -> str:
        """The options as written after ``?`` (``""`` when none)."""
        return "&".join(f"{key}={value}" for key, value in self.options)

    def with_option(self, key: str, value) -> "AgentSpec":
        """This spec with ``key=value`` added to its options, unless they set ``key`` already."""
        if any(given == key for given, _ in self.options):
            return self
        return replace(self, options=self.options + ((key, str(value)),))

    def __str__(self) -> str:
        text = self.kind + (f":{self.name}" if self.name or self.argument else "")
        text += f":{self.argument}" if self.argument else ""
        return text + (f"?{self.query}" if self.options else "")


def parse_specs(text: str) -> list:
    """A comma-separated list of specs, each parsed; an empty list or an empty entry (``","``,
    ``"a,,b"``) is bad input, never a silent fall-back to a default roster."""
    entries = [entry.strip() for entry in (text or "").split(",")]
    if not any(entries):
        raise PolicySpecError(f"{text!r} names no policy; give specs like scripted:random,scripted:heuristic")
    if not all(entries):
        raise PolicySpecError(f"{text!r} has an empty entry; give specs separated by single commas")
    return [AgentSpec.parse(entry) for entry in entries]


def short_names(specs) -> dict:
    """``{str(spec): name}``: names for places a spec's whole string does not fit (a console table's
    column, a figure's axis), each unique among ``specs``. A name is the spec without its options
    (``smollm2``, ``scripted:random``, ``hf:org/model``), then in brackets the last part of an
    ``adapter=`` folder and the fewest of the other options, in the spec's order, that tell it
    apart from the specs of the same model (kind, name and adapter): ``smollm2 [temperature=0.7]``,
    ``smollm2 [mode=score]``,
    ``smollm2 [adapter=smollm2_selfplay_liars_dice]``. A spec that does not parse, or that no
    short name tells apart (the same options in another order), keeps its whole string."""
    parsed = {}
    for spec in specs:
        try:
            parsed[str(spec)] = AgentSpec.of(spec)
        except PolicySpecError:
            parsed[str(spec)] = None
    models: dict = {}
    for spec in filter(None, parsed.values()):
        models.setdefault(_model_of(spec), []).append(spec)
    names = {text: text if spec is None else _short_name(spec, models[_model_of(spec)])
             for text, spec in parsed.items()}
    taken = Counter(names.values())
    return {text: name if taken[name] == 1 else text for text, name in names.items()}


def _model_of(spec: AgentSpec) -> tuple:
    """The weights a spec plays: its kind and name, and its adapters."""
    return replace(spec, options=()), tuple(value for key, value in spec.options if key == "adapter")


def _short_name(spec: AgentSpec, same_model: list) -> str:
    """:func:`short_names`'s name of ``spec`` among ``same_model`` (the specs of its :func:`_model_of`)."""
    shown = []
    others = [other for other in same_model if other != spec]
    adapter_first = sorted(spec.options, key=lambda option: option[0] != "adapter")
    for key, value in adapter_first:
        if key == "adapter":                 # always shown: it names the weights played
            shown.append(f"adapter={value.rstrip('/').rsplit('/', 1)[-1]}")
        elif not others or all((key, value) in other.options for other in others):
            continue
        else:
            shown.append(f"{key}={value}")
        others = [other for other in others if (key, value) in other.options]
    if others:                               # the same options in another order: no short name
        return str(spec)
    name = str(replace(spec, options=()))
    return name + (f" [{', '.join(shown)}]" if shown else "")
