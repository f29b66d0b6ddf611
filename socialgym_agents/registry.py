"""Policy spec strings, as the CLI and tournaments take them.

| spec                              | policy                                              |
|-----------------------------------|-----------------------------------------------------|
| ``scripted:random``               | uniform random legal action                         |
| ``scripted:constant:<action>``    | always ``<action>``                                 |
| ``scripted:tit_for_tat`` etc.     | iterated-game strategies (see socialgym_agents.scripted)      |
| ``scripted:heuristic``            | the per-game heuristic baseline (socialgym_agents.baselines)  |
| ``smollm2``, ``hf:…``, ``openai:…``| LLM policies (socialgym_agents.llm; options after ``?``)      |
| ``human``                         | a person at the terminal (socialgym_agents.human)             |
"""
from __future__ import annotations

import functools

import socialgym_env
from socialgym_env.errors import SocialGymError

from .baselines import HeuristicPolicy
from .scripted import SCRIPTED, ConstantPolicy

_EXTRA_KINDS: dict = {}
# Built by socialgym_agents.llm / socialgym_agents.human, imported only when such a spec is used (one-way: neither
# module imports this one).
LLM_KINDS = ("smollm2", "hf", "openai")


class PolicySpecError(SocialGymError, ValueError):
    """A policy spec string that names no policy; the message lists the valid forms."""


def register_kind(prefix: str, factory) -> None:
    """Add a spec prefix (e.g. "hf", "openai") whose factory takes (rest_of_spec, seed)."""
    _EXTRA_KINDS[prefix] = factory


def split_kind(spec: str) -> tuple[str, str]:
    """``"hf:/m?context=512"`` -> (``"hf"``, ``"/m?context=512"``); options straight after a
    bare kind move to the rest: ``"smollm2?temperature=0.7"`` -> (``"smollm2"``, ``"?temperature=0.7"``)."""
    kind, _, rest = spec.partition(":")
    if "?" in kind:
        kind, _, query = kind.partition("?")
        rest = "?" + query + (":" + rest if rest else "")
    return kind, rest


def make_policy(spec: str, seed: int = 0):
    """Build a policy from its spec string; unknown specs raise PolicySpecError (a ValueError) listing the valid ones."""
    kind, rest = split_kind(spec)
    if kind == "scripted":
        name, _, arg = rest.partition(":")
        if name == "constant":
            if not arg:
                raise PolicySpecError("scripted:constant needs an action, e.g. scripted:constant:defect")
            return ConstantPolicy(arg, seed=seed)
        if name == "heuristic":
            return HeuristicPolicy(seed=seed)
        if name in SCRIPTED:
            return SCRIPTED[name](seed=seed)
        valid = sorted(list(SCRIPTED) + ["constant:<action>", "heuristic"])
        raise PolicySpecError(f"unknown scripted policy {rest!r}; valid: {', '.join('scripted:' + v for v in valid)}")
    if kind in _EXTRA_KINDS:
        return _EXTRA_KINDS[kind](rest, seed)
    if kind in LLM_KINDS:
        from .llm import make_llm_policy
        return make_llm_policy(kind, rest, seed)
    if kind == "human":
        from .human import HumanPolicy
        return HumanPolicy(seed=seed)
    raise PolicySpecError(f"unknown policy spec {spec!r}; valid forms: {_valid_forms()}")


def _valid_forms() -> str:
    return ", ".join(["scripted:<name>", "smollm2[?options]", "hf:<model>[?options]",
                      "openai:<model>@<url>[?options]", "human"] + [f"{k}:..." for k in sorted(_EXTRA_KINDS)])


def split_specs(text: str) -> list[str]:
    """A comma-separated list of policy specs; an empty list or an empty entry (``","``,
    ``"a,,b"``) is bad input, never a silent fall-back to a default roster."""
    specs = [s.strip() for s in (text or "").split(",")]
    if not any(specs):
        raise PolicySpecError(f"{text!r} names no policy; give specs like scripted:random,scripted:heuristic")
    if not all(specs):
        raise PolicySpecError(f"{text!r} has an empty entry; give specs separated by single commas")
    return specs


def check_spec(spec, games=None) -> None:
    """Raise PolicySpecError (one line: what is wrong, what is valid) unless ``spec`` names a
    policy that can be built, without building any model: scripted specs are built (free);
    model specs have their options parsed and range-checked, ``hf:`` paths looked up,
    ``openai:`` URLs parsed, ``adapter=`` folders checked. ``scripted:constant:<action>`` must
    name an action type of ``games`` (default: of any registered game)."""
    if not isinstance(spec, str) or not spec.strip():
        raise PolicySpecError(f"empty policy spec {spec!r}; valid forms: {_valid_forms()}")
    if spec != spec.strip():
        raise PolicySpecError(f"policy spec {spec!r} has spaces around it; valid forms: {_valid_forms()}")
    kind, rest = split_kind(spec)
    if kind == "scripted":
        name, _, arg = rest.partition(":")
        if arg and name != "constant":
            raise PolicySpecError(f"scripted:{name} takes no argument (got {spec!r})")
        make_policy(spec)
        if name == "constant":
            _check_constant_action(spec, arg, games)
    elif kind == "human":
        if rest:
            raise PolicySpecError(f"human takes no argument (got {spec!r})")
    elif kind in _EXTRA_KINDS:
        return                         # a plugin's factory is its own check
    elif kind in LLM_KINDS:
        from .llm import check_llm_spec
        from .llm.loading import ModelNotAvailable
        try:
            check_llm_spec(kind, rest)
        except (ValueError, ModelNotAvailable) as err:
            raise PolicySpecError(f"{spec}: {err}") from None
    else:
        raise PolicySpecError(f"unknown policy spec {spec!r}; valid forms: {_valid_forms()}")


def _check_constant_action(spec: str, action: str, games) -> None:
    action_type = action.split()[0] if action.split() else ""
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
