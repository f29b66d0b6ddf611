"""LLM policy settings and the ``?key=value&...`` option suffix of model spec strings.

| option            | default        | meaning                                                        |
|-------------------|----------------|----------------------------------------------------------------|
| ``temperature``   | 0              | 0 = greedy (deterministic); > 0 samples                        |
| ``top_p``         | 1.0            | nucleus sampling mass (only when sampling)                     |
| ``max_new_tokens``| 64             | reply length cap (tokens)                                      |
| ``seed``          | policy seed    | sampling seed (per seat and turn, independent of batching)     |
| ``max_retries``   | 2              | re-asks after an unparsable / illegal reply                    |
| ``mode``          | batched        | hf only: ``batched`` (KV-cache reuse, batched decode),         |
|                   |                | ``naive`` (one prompt, one ``generate`` per decision) or       |
|                   |                | ``score`` (finite legal lists: rank every legal reply by its   |
|                   |                | log-probability, one batched forward pass; no generation)      |
| ``prompt``        | turns          | ``turns``: each later decision appends the last reply and only |
|                   |                | the new lines to the seat's chat (KV reuse); ``single``: the   |
|                   |                | whole Appendix-E prompt as one message every turn              |
| ``constrained``   | 1              | replies generated under the grammar of legal replies (hf);     |
|                   |                | servers get it as ``response_format`` JSON schema; 0 = free    |
| ``batch_size``    | 32             | hf: max sequences decoded together (prefill passes are cut to  |
|                   |                | ~3,200 tokens, where a CPU pass is fastest per token)          |
| ``cache_mb``      | 2048           | hf: memory budget of the per-seat KV caches (LRU eviction)     |
| ``context``       | model's        | hf: context length override (tokens)                           |
| ``threads``       | cores          | hf: ``torch.set_num_threads``                                  |
| ``dtype``         | float32        | hf: weights and KV caches in ``float32`` or ``bfloat16`` (in    |
|                   |                | llm_throughput 3.1-3.4x the decisions/s on an AMX CPU, 1.7x on |
|                   |                | AVX512-BF16 alone; slower on CPUs with neither);               |
|                   |                | ``auto``: bfloat16 where the CPU has those, else float32       |
| ``stop_at_json``  | 1              | stop decoding once a complete ``{...}`` was generated          |
| ``adapter``       | none           | hf/smollm2: folder of a trained PEFT LoRA adapter (merged in)  |
| ``device``        | auto           | hf/smollm2: ``cpu``, ``cuda``, ``cuda:N``; ``auto`` = a GPU    |
|                   |                | when torch sees one, else the CPU; every input tensor follows  |
|                   |                | the model                                                      |
| ``device_map``    | none           | hf: e.g. ``auto`` (accelerate places the layers over the GPUs  |
|                   |                | and the CPU) for a model too big for one device                |
| ``timeout``       | 60             | openai: seconds per HTTP request                               |
| ``attempts``      | 5              | openai: HTTP attempts per request (retries on 429/5xx/timeouts)|
| ``backoff``       | 1.0            | openai: first backoff in seconds (doubles, capped at 30 s)     |
| ``concurrency``   | 8              | openai: parallel requests of one batch                         |
| ``api_key_env``   | OPENAI_API_KEY | openai: environment variable that holds the API key            |
| ``context_chars`` | 0 (no limit)   | openai: prompt budget in characters (history trimmed to fit)   |
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Optional
from urllib.parse import parse_qsl


MODES = ("batched", "naive", "score")
DTYPES = ("float32", "bfloat16", "auto")


@dataclass
class LLMConfig:
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    seed: Optional[int] = None
    max_retries: int = 2
    mode: str = "batched"
    constrained: bool = True
    prompt: str = "turns"
    batch_size: int = 32
    cache_mb: int = 2048
    context: int = 0
    threads: int = 0
    dtype: str = "float32"
    stop_at_json: bool = True
    timeout: float = 60.0
    attempts: int = 5
    backoff: float = 1.0
    concurrency: int = 8
    api_key_env: str = "OPENAI_API_KEY"
    context_chars: int = 0
    adapter: str = ""
    device: str = "auto"
    device_map: str = ""

    def sampling(self) -> dict:
        """The generation settings recorded in each decision's meta."""
        return {"temperature": self.temperature, "top_p": self.top_p,
                "max_new_tokens": self.max_new_tokens, "seed": self.seed,
                "mode": self.mode, "constrained": self.constrained}

    def to_dict(self) -> dict:
        return asdict(self)


def _convert(name: str, text: str, kind):
    if kind is bool or kind == "bool":
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"option {name}={text!r}: expected true/false")
    try:
        if kind in (int, "int", "Optional[int]"):
            return int(text)
        if kind in (float, "float"):
            return float(text)
    except ValueError:
        raise ValueError(f"option {name}={text!r}: expected a number") from None
    return text


def split_spec(rest: str) -> tuple[str, str]:
    """``"path?temperature=0.7"`` -> (``"path"``, ``"temperature=0.7"``)."""
    target, _, query = rest.partition("?")
    return target, query


def parse_options(query: str, seed: int = 0) -> LLMConfig:
    """An LLMConfig from ``key=value&...``; unknown keys raise ValueError listing the valid ones."""
    config = LLMConfig(seed=seed)
    types = {f.name: f.type for f in fields(LLMConfig)}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in types:
            raise ValueError(f"unknown LLM option {key!r}; valid: {', '.join(sorted(types))}")
        setattr(config, key, _convert(key, value, types[key]))
    if config.prompt not in ("turns", "single"):
        raise ValueError(f"option prompt={config.prompt!r}: expected turns or single")
    if config.mode not in MODES:
        raise ValueError(f"option mode={config.mode!r}: expected one of {', '.join(MODES)}")
    if config.device not in ("auto", "cpu") and not config.device.startswith("cuda"):
        raise ValueError(f"option device={config.device!r}: expected auto, cpu, cuda or cuda:N")
    if config.dtype not in DTYPES:
        raise ValueError(f"option dtype={config.dtype!r}: expected one of {', '.join(DTYPES)}")
    if config.temperature < 0 or not 0 < config.top_p <= 1 or config.max_new_tokens < 1 or config.max_retries < 0:
        raise ValueError("options need temperature >= 0, 0 < top_p <= 1, max_new_tokens >= 1, max_retries >= 0")
    return config
