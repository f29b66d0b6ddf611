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

from .baselines import HeuristicPolicy
from .scripted import SCRIPTED, ConstantPolicy

_EXTRA_KINDS: dict = {}
# Built by agents.llm / agents.human, imported only when such a spec is used (one-way: neither
# module imports this one).
LLM_KINDS = ("smollm2", "hf", "openai")


def register_kind(prefix: str, factory) -> None:
    """Add a spec prefix (e.g. "hf", "openai") whose factory takes (rest_of_spec, seed)."""
    _EXTRA_KINDS[prefix] = factory


def make_policy(spec: str, seed: int = 0):
    """Build a policy from its spec string; unknown specs raise ValueError listing the valid ones."""
    kind, _, rest = spec.partition(":")
    if "?" in kind:   # options straight after a bare kind: "smollm2?temperature=0.7"
        kind, _, query = kind.partition("?")
        rest = "?" + query + (":" + rest if rest else "")
    if kind == "scripted":
        name, _, arg = rest.partition(":")
        if name == "constant":
            if not arg:
                raise ValueError("scripted:constant needs an action, e.g. scripted:constant:defect")
            return ConstantPolicy(arg, seed=seed)
        if name == "heuristic":
            return HeuristicPolicy(seed=seed)
        if name in SCRIPTED:
            return SCRIPTED[name](seed=seed)
        valid = sorted(list(SCRIPTED) + ["constant:<action>", "heuristic"])
        raise ValueError(f"unknown scripted policy {rest!r}; valid: {', '.join('scripted:' + v for v in valid)}")
    if kind in _EXTRA_KINDS:
        return _EXTRA_KINDS[kind](rest, seed)
    if kind in LLM_KINDS:
        from .llm import make_llm_policy
        return make_llm_policy(kind, rest, seed)
    if kind == "human":
        from .human import HumanPolicy
        return HumanPolicy(seed=seed)
    raise ValueError(f"unknown policy spec {spec!r}; valid forms: scripted:<name>, "
                     + ", ".join(f"{k}:..." for k in sorted(set(_EXTRA_KINDS) | set(LLM_KINDS) | {"human"})))
