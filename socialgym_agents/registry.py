"""Policies from their specs (:class:`socialgym_agents.specs.AgentSpec`, or spec strings parsed on entry).

| spec                              | policy                                              |
|-----------------------------------|-----------------------------------------------------|
| ``scripted:random``               | uniform random legal action                         |
| ``scripted:constant:<action>``    | always ``<action>``                                 |
| ``scripted:tit_for_tat`` etc.     | iterated-game strategies (see socialgym_agents.scripted)      |
| ``scripted:heuristic``            | the per-game heuristic baseline (socialgym_agents.baselines); refused in a game without one |
| ``smollm2``, ``hf:…``, ``openai:…``| LLM policies (socialgym_agents.llm; options after ``?``)      |
| ``human``                         | a person at the terminal (socialgym_agents.human)             |
"""
from __future__ import annotations

import functools

import socialgym_env

from .baselines import HeuristicPolicy, refuse_without_baseline
from .scripted import SCRIPTED, ConstantPolicy
from .specs import LLM_KINDS, VALID_FORMS, AgentSpec, PolicySpecError, parse_specs

__all__ = ["AgentSpec", "LLM_KINDS", "PolicySpecError", "check_spec", "make_policy", "parse_specs", "register_kind"]

# Built by socialgym_agents.llm / socialgym_agents.human, imported only when such a spec is used (one-way: neither
# module imports this one).
_EXTRA_KINDS: dict = {}


def register_kind(prefix: str, factory) -> None:
    """Add a spec kind (e.g. ``planted``) whose factory takes (AgentSpec, seed) and returns a policy."""
    _EXTRA_KINDS[prefix] = factory


def make_policy(spec, seed: int = 0):
    """Build the policy of ``spec`` (an AgentSpec, or a string parsed here); unknown specs raise
    PolicySpecError (a ValueError) listing the valid ones."""
    spec = AgentSpec.of(spec)
    if spec.kind == "scripted":
        return _make_scripted(spec, seed)
    if spec.kind in _EXTRA_KINDS:
        return _EXTRA_KINDS[spec.kind](spec, seed)
    if spec.is_model:
        from .llm import make_llm_policy
        return make_llm_policy(spec, seed)
    if spec.kind == "human":
        from .human import HumanPolicy
        return HumanPolicy(seed=seed)
    raise PolicySpecError(f"unknown policy spec {str(spec)!r}; valid forms: {_valid_forms()}")


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


def _valid_forms() -> str:
    return ", ".join([VALID_FORMS] + [f"{k}:..." for k in sorted(_EXTRA_KINDS)])


def check_spec(spec, games=None) -> AgentSpec:
    """The AgentSpec of ``spec`` (a string is parsed here), checked: PolicySpecError (one line: what
    is wrong, what is valid) unless it names a policy that can be built, without building any
    model: scripted specs are built (free); model specs have their options parsed and
    range-checked, ``hf:`` paths looked up, ``openai:`` URLs parsed, ``adapter=`` folders checked.
    ``scripted:constant:<action>`` must name an action type of ``games`` (default: of any
    registered game); ``scripted:heuristic`` needs a baseline in each of ``games``."""
    spec = AgentSpec.of(spec)
    if spec.kind == "scripted":
        if spec.argument and spec.name != "constant":
            raise PolicySpecError(f"scripted:{spec.name} takes no argument (got {str(spec)!r})")
        _make_scripted(spec, 0)
        if spec.name == "constant":
            _check_constant_action(spec, games)
        if spec.name == "heuristic" and games:
            refuse_without_baseline(games)
    elif spec.kind == "human":
        if spec.name or spec.options:
            raise PolicySpecError(f"human takes no argument (got {str(spec)!r})")
    elif spec.kind in _EXTRA_KINDS:
        pass                           # a plugin's factory is its own check
    elif spec.is_model:
        from .llm import check_llm_spec
        from .llm.loading import ModelNotAvailable
        try:
            check_llm_spec(spec)
        except (ValueError, ModelNotAvailable) as err:
            raise PolicySpecError(f"{spec}: {err}") from None
    else:
        raise PolicySpecError(f"unknown policy spec {str(spec)!r}; valid forms: {_valid_forms()}")
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
