"""Policy spec strings, as the CLI and tournaments take them.

| spec                              | policy                                              |
|-----------------------------------|-----------------------------------------------------|
| ``scripted:random``               | uniform random legal action                         |
| ``scripted:constant:<action>``    | always ``<action>``                                 |
| ``scripted:tit_for_tat`` etc.     | iterated-game strategies (see agents.scripted)      |
| ``scripted:heuristic``            | the per-game heuristic baseline (agents.baselines)  |
| ``smollm2``, ``hf:…``, ``openai:…``| LLM policies (agents.llm; options after ``?``)      |
| ``human``                         | a person at the terminal (agents.human)             |
"""
from __future__ import annotations

from socialgym_env.errors import SocialGymError

from .baselines import HeuristicPolicy
from .scripted import SCRIPTED, ConstantPolicy

_EXTRA_KINDS: dict = {}
# Built by agents.llm / agents.human, imported only when such a spec is used (one-way: neither
# module imports this one).
LLM_KINDS = ("smollm2", "hf", "openai")


class PolicySpecError(SocialGymError, ValueError):
    """A policy spec string that names no policy; the message lists the valid forms."""


def register_kind(prefix: str, factory) -> None:
    """Add a spec prefix (e.g. "hf", "openai") whose factory takes (rest_of_spec, seed)."""
    _EXTRA_KINDS[prefix] = factory


def make_policy(spec: str, seed: int = 0):
    """Build a policy from its spec string; unknown specs raise PolicySpecError (a ValueError) listing the valid ones."""
    kind, _, rest = spec.partition(":")
    if "?" in kind:   # options straight after a bare kind: "smollm2?temperature=0.7"
        kind, _, query = kind.partition("?")
        rest = "?" + query + (":" + rest if rest else "")
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
    return "scripted:<name>, " + ", ".join(f"{k}:..." for k in sorted(set(_EXTRA_KINDS) | set(LLM_KINDS) | {"human"}))


def check_spec(spec: str) -> None:
    """Raise PolicySpecError unless ``spec`` names a known policy. Scripted specs are built
    (free); model specs are checked for a known kind only, without loading any weights."""
    kind = spec.partition(":")[0].partition("?")[0]
    if kind == "scripted":
        make_policy(spec)
    elif kind not in _EXTRA_KINDS and kind not in LLM_KINDS and kind != "human":
        raise PolicySpecError(f"unknown policy spec {spec!r}; valid forms: {_valid_forms()}")
