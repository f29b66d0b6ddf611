"""Policies from their specs (:class:`socialgym_agents.specs.AgentSpec`, or spec strings parsed on entry).

| spec                              | policy                                              |
|-----------------------------------|-----------------------------------------------------|
| ``scripted:random``               | uniform random legal action                         |
| ``scripted:constant:<action>``    | always ``<action>``                                 |
| ``scripted:tit_for_tat`` etc.     | iterated-game strategies (see socialgym_agents.scripted)      |
| ``scripted:heuristic``            | the per-game heuristic baseline (socialgym_agents.baselines); refused in a game without one |
| ``smollm2``, ``hf:…``, ``openai:…``| LLM policies (socialgym_agents.llm; options after ``?``)      |
| any registered backend's kind     | its LLM policy (socialgym_agents.llm.backends)      |
| ``human``                         | a person at the terminal (socialgym_agents.human)             |
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional

import socialgym_env

from .baselines import HeuristicPolicy, refuse_without_baseline
from .scripted import SCRIPTED, ConstantPolicy
from .specs import AgentSpec, PolicySpecError, parse_specs

__all__ = ["AgentSpec", "PolicyKind", "PolicySpecError", "check_spec", "is_model_spec", "make_policy", "parse_specs",
           "policy_kind", "register_kind"]


@dataclass(frozen=True)
class PolicyKind:
    """What a spec kind is. ``factory(spec, seed)`` builds its policy; ``check(spec, games)``
    raises PolicySpecError (one line) for a spec that could not be built, without building a
    model (None: the factory is the check). Traits, what servers and runners go by:
    ``loads_model``: it loads weights or opens a server connection, so it is built once and
    shared, off the event loop, and only the operator may choose it; ``interactive``: a person
    plays it. A kind with neither is scripted: cheap, and safe to build for any request.
    ``form``: how its specs are written (error messages)."""

    name: str
    factory: Callable
    check: Optional[Callable] = None
    loads_model: bool = False
    interactive: bool = False
    form: str = ""

    @property
    def scripted(self) -> bool:
        return not (self.loads_model or self.interactive)

    def build(self, spec: AgentSpec, seed: int):
        return self.factory(spec, seed)

    def check_spec(self, spec: AgentSpec, games=None) -> None:
        if self.check is not None:
            self.check(spec, games)


def _make_human(spec: AgentSpec, seed: int):
    from .human import HumanPolicy
    return HumanPolicy(seed=seed)


def _check_human(spec: AgentSpec, games) -> None:
    if spec.name or spec.options:
        raise PolicySpecError(f"human takes no argument (got {str(spec)!r})")


def _make_model(spec: AgentSpec, seed: int):
    from .llm import make_llm_policy
    return make_llm_policy(spec, seed)


def _check_model(spec: AgentSpec, games) -> None:
    from .llm import check_llm_spec
    from .llm.loading import ModelNotAvailable
    try:
        check_llm_spec(spec)
    except (ValueError, ModelNotAvailable) as err:
        raise PolicySpecError(f"{spec}: {err}") from None


def _make_scripted(spec: AgentSpec, seed: int):
    if spec.name == "constant":
        if not spec.argument:
            raise PolicySpecError("scripted:constant needs an action, e.g. scripted:constant:defect")
        return ConstantPolicy(spec.argument, seed=seed)
    if spec.name == "heuristic":
        return HeuristicPolicy(seed=seed)
    if spec.name in SCRIPTED:
        return SCRIPTED[spec.name](seed=seed)
    valid = sorted(list(SCRIPTED) + ["constant:<action>", "heuristic"])
    given = spec.name + (f":{spec.argument}" if spec.argument else "")
    raise PolicySpecError(f"unknown scripted policy {given!r}; valid: {', '.join('scripted:' + v for v in valid)}")


def _check_scripted(spec: AgentSpec, games) -> None:
    """``scripted:constant:<action>`` must name an action type of ``games`` (default: of any
    registered game); ``scripted:heuristic`` needs a baseline in each of ``games``."""
    if spec.argument and spec.name != "constant":
        raise PolicySpecError(f"scripted:{spec.name} takes no argument (got {str(spec)!r})")
    _make_scripted(spec, 0)
    if spec.name == "constant":
        _check_constant_action(spec, games)
    if spec.name == "heuristic" and games:
        refuse_without_baseline(games)


_BUILT_IN = {"scripted": PolicyKind("scripted", _make_scripted, _check_scripted, form="scripted:<name>"),
             "human": PolicyKind("human", _make_human, _check_human, interactive=True, form="human")}
# Plugins' kinds (socialgym_benchmarks' planted students, tests' fakes); model kinds are the
# backends registered in socialgym_agents.llm.backends, imported only when such a spec is used.
_PLUGINS: dict = {}


def register_kind(prefix: str, factory: Callable, *, check: Optional[Callable] = None, loads_model: bool = False,
                  interactive: bool = False, form: str = "", replace: bool = False) -> PolicyKind:
    """Add a spec kind (e.g. ``planted``) whose ``factory`` takes (AgentSpec, seed) and returns a
    policy, with its traits (:class:`PolicyKind`): declare ``loads_model=True`` for a kind that
    loads weights or connects to a server, ``interactive=True`` for a person. A built-in kind
    cannot be replaced; another plugin's only with ``replace=True``."""
    kind = PolicyKind(prefix, factory, check, loads_model, interactive, form or f"{prefix}:...")
    if prefix in _BUILT_IN:
        raise PolicySpecError(f"{prefix!r} is a built-in policy kind; register the plugin under another prefix")
    if _PLUGINS.get(prefix, kind) != kind and not replace:
        raise PolicySpecError(f"a policy kind {prefix!r} is already registered; pass replace=True to replace it")
    _PLUGINS[prefix] = kind
    return kind


def policy_kind(spec) -> PolicyKind:
    """The :class:`PolicyKind` of ``spec`` (an AgentSpec, or a string parsed here): a built-in,
    a plugin's, or a registered model backend's; PolicySpecError listing the valid forms for
    any other."""
    spec = AgentSpec.of(spec)
    found = _BUILT_IN.get(spec.kind) or _PLUGINS.get(spec.kind) or _model_kind(spec.kind)
    if found is None:
        raise PolicySpecError(f"unknown policy spec {str(spec)!r}; valid forms: {_valid_forms()}")
    return found


def _model_kind(name: str) -> Optional[PolicyKind]:
    """The kind of a registered model backend: it loads a model or opens a connection."""
    from .llm.backends import backend_kind
    backend = backend_kind(name)
    return None if backend is None else PolicyKind(name, _make_model, _check_model, loads_model=True,
                                                   form=backend.written)


def _valid_forms() -> str:
    from .llm.backends import backend_kinds
    models = [backend.written for backend in backend_kinds().values()]
    human = _BUILT_IN["human"].form
    return ", ".join([_BUILT_IN["scripted"].form, *models, human] + [_PLUGINS[k].form for k in sorted(_PLUGINS)])


def is_model_spec(spec) -> bool:
    """Whether ``spec`` (an AgentSpec or a string) names a registered model backend's kind
    (:func:`socialgym_agents.llm.backends.is_model_spec`); False for one that does not parse."""
    from .llm.backends import is_model_spec as names_backend
    return names_backend(spec)


def make_policy(spec, seed: int = 0):
    """Build the policy of ``spec`` (an AgentSpec, or a string parsed here); unknown specs raise
    PolicySpecError (a ValueError) listing the valid ones."""
    spec = AgentSpec.of(spec)
    return policy_kind(spec).build(spec, seed)


def check_spec(spec, games=None) -> AgentSpec:
    """The AgentSpec of ``spec`` (a string is parsed here), checked: PolicySpecError (one line: what
    is wrong, what is valid) unless it names a policy that can be built, without building any
    model: scripted specs are built (free); model specs have their options parsed and
    range-checked, ``hf:`` paths looked up, ``openai:`` URLs parsed, ``adapter=`` folders checked.
    ``scripted:constant:<action>`` must name an action type of ``games`` (default: of any
    registered game); ``scripted:heuristic`` needs a baseline in each of ``games``."""
    spec = AgentSpec.of(spec)
    policy_kind(spec).check_spec(spec, games)
    return spec


def _check_constant_action(spec: AgentSpec, games) -> None:
    action_type = spec.argument.split()[0] if spec.argument.split() else ""
    ids = list(games) if games else [g["id"] for g in socialgym_env.list_games()]
    if any(action_type in action_types_of(game) for game in ids):     # stops at the first game that has it
        return
    where = ", ".join(ids) if games else "any registered game"
    examples = ", ".join(sorted({t for game in ids for t in action_types_of(game)})[:12])
    raise PolicySpecError(f"{spec}: {action_type!r} is not an action of {where}; actions there include {examples}")


@functools.lru_cache(maxsize=None)
def action_types_of(game: str) -> frozenset:
    """The action types two seeded random episodes of ``game`` offer (milliseconds; chess 0.3 s).
    A constant spec is only rejected when its action appears in none of the games it is for."""
    from socialgym_env.testing import random_junk_episode
    types: set = set()

    def legal_noting_types(env, agent, info, rng):
        grammar = env.grammar(agent)
        types.update(grammar.action_types())
        return grammar.sample(rng).text

    for seed in range(2):
        random_junk_episode(game, seed, junk_rate=0.0, legal=legal_noting_types)
    return frozenset(types)
