"""LLM policy settings and the ``?key=value&...`` option suffix of model spec strings.

| option            | default        | meaning                                                        |
|-------------------|----------------|----------------------------------------------------------------|
| ``temperature``   | 0              | 0 = greedy (deterministic); > 0 samples                        |
| ``top_p``         | 1.0            | nucleus sampling mass (only when sampling)                     |
| ``max_new_tokens``| 64 + think     | reply length cap (tokens), reasoning included                  |
| ``think``         | 0              | think-then-act: up to N tokens of free reasoning before the    |
|                   |                | action, ``{"reasoning": "...", "action": {...}}`` (constrained |
|                   |                | locally; a schema field or reasoning channel on servers)       |
| ``seed``          | policy seed    | sampling seed (per seat and turn, independent of batching)     |
| ``max_retries``   | 2              | re-asks after an unparsable / illegal reply                    |
| ``mode``          | batched        | hf only: ``batched`` (KV-cache reuse, batched decode),         |
|                   |                | ``naive`` (one prompt, one ``generate`` per decision) or       |
|                   |                | ``score`` (finite legal lists: rank every legal reply by its   |
|                   |                | log-probability, one batched forward pass; no generation)      |
| ``prompt``        | turns          | ``turns``: each later decision appends the last reply and only |
|                   |                | the new lines to the seat's chat (KV reuse); ``single``: the   |
|                   |                | whole Appendix-E prompt as one message every turn              |
| ``template``      | paper          | the prompt's wording: ``paper`` (Appendix E) or ``compact``   |
|                   |                | (for constrained play: short headers, the legal list, one     |
|                   |                | reply line; socialgym_agents.llm.prompt); part of the spec, so |
|                   |                | the two rate as two policies                                   |
| ``constrained``   | 1              | replies generated under the grammar of legal replies (hf);     |
|                   |                | servers get it as ``response_format`` JSON schema; 0 = free    |
| ``batch_size``    | 32             | hf: max sequences decoded together (prefill passes are cut to  |
|                   |                | ~3,200 tokens, where a CPU pass is fastest per token)          |
| ``cache_mb``      | 768            | hf: memory budget of the per-seat KV caches (LRU eviction)     |
| ``batch_kv_mb``   | 384            | hf: memory budget of one decode batch's K/V buffers (a tick's  |
|                   |                | rows are cut into batches within it; a row longer runs alone)  |
| ``context``       | model's        | hf: context length override (tokens)                           |
| ``threads``       | cores          | hf: ``torch.set_num_threads``                                  |
| ``dtype``         | float32        | hf: weights and KV caches in ``float32`` or ``bfloat16`` (in    |
|                   |                | llm_throughput 3.1-3.4x the decisions/s on an AMX CPU, 1.7x on |
|                   |                | AVX512-BF16 alone; slower on CPUs with neither);               |
|                   |                | ``auto``: bfloat16 where the CPU has those (and on a GPU that  |
|                   |                | does), int8 on any other CPU (measured faster than float32     |
|                   |                | on an AVX2-only CPU), float32 on an older GPU;                 |
|                   |                | ``int8``: every Linear layer (attention, MLP, output) in int8  |
|                   |                | (socialgym_agents.llm.int8), the rest in float32, keys and     |
|                   |                | values rounded to bfloat16 as the caches take them (seat       |
|                   |                | caches kept in bfloat16); CPU only (``device=auto``: the CPU)  |
| ``runtime``       | torch          | smollm2 only: what computes the model. ``torch`` (PyTorch,    |
|                   |                | the reference and the training path); ``openvino`` or         |
|                   |                | ``onnxruntime``: its int8 export through that CPU runtime     |
|                   |                | (socialgym_agents.llm.runtime_backend; float32 activations;   |
|                   |                | ``dtype`` other than float32/auto, ``adapter``, ``device``    |
|                   |                | other than auto/cpu and ``device_map`` are refused, ``dtype=  |
|                   |                | auto`` is ignored); ``auto``: what was measured fastest on   |
|                   |                | the main job for this CPU type (runtime_backend.auto_runtime: |
|                   |                | torch on both AVX-512-BF16 and emulated AVX2-only CPUs); each |
|                   |                | decision's meta records the backend that played. Part of the  |
|                   |                | spec, so the runtimes rate as policies of their own           |
| ``stop_at_json``  | 1              | stop decoding once a complete ``{...}`` was generated          |
| ``adapter``       | none           | hf/smollm2: folder of a trained PEFT LoRA adapter (merged in)  |
| ``head``          | none           | hf/smollm2 with ``mode=score``: a decision-head file           |
|                   |                | (socialgym_agents.llm.decision_head): a linear head over the   |
|                   |                | frozen model's features of each legal reply chooses            |
| ``device``        | auto           | hf/smollm2: ``cpu``, ``cuda``, ``cuda:N``; ``auto`` = a GPU    |
|                   |                | when torch sees one, else the CPU; every input tensor follows  |
|                   |                | the model                                                      |
| ``device_map``    | none           | hf: e.g. ``auto`` (accelerate places the layers over the GPUs  |
|                   |                | and the CPU) for a model too big for one device                |
| ``timeout``       | 60             | openai: seconds per HTTP request                               |
| ``attempts``      | 5              | openai: HTTP attempts per request (retries on 429/5xx/timeouts)|
| ``backoff``       | 1.0            | openai: first backoff in seconds (doubles, capped at 30 s)     |
| ``concurrency``   | 64             | openai: requests in flight (halved by a 429, grows back)       |
| ``structured``    | auto           | openai: structured-output level: ``auto`` (probe the ladder),  |
|                   |                | json_schema, json_object, structured_outputs, guided_json,     |
|                   |                | grammar or none (see socialgym_agents.llm.openai_backend)                |
| ``api_key_env``   | OPENAI_API_KEY | openai: environment variable that holds the API key            |
| ``context_chars`` | 0 (no limit)   | openai: prompt budget in characters (history trimmed to fit)   |
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Optional
from urllib.parse import unquote_plus

from ..specs import split_options


MODES = ("batched", "naive", "score")
TALK_MODES = ("free", "pass")
TEMPLATE_NAMES = ("paper", "compact")     # socialgym_agents.llm.prompt.TEMPLATES
DTYPES = ("float32", "bfloat16", "auto", "int8")
RUNTIMES = ("torch", "openvino", "onnxruntime", "auto")   # socialgym_agents.llm.runtime_backend
# The structured-output ladder of server backends, most to least precise (openai_backend).
STRUCTURED_LEVELS = ("json_schema", "json_object", "structured_outputs", "guided_json", "grammar", "none")
DEFAULT_MAX_NEW_TOKENS = 64     # a JSON action; thinking adds its own budget on top
MAX_NEW_TOKENS_LIMIT = 131072  # the longest context windows of today's servers; a larger cap is a typo
ACTION_TOKENS_MIN = 16          # what max_new_tokens must leave for the action after the reasoning


@dataclass
class LLMConfig:
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 0           # 0: DEFAULT_MAX_NEW_TOKENS + think
    seed: Optional[int] = None
    max_retries: int = 2
    mode: str = "batched"
    constrained: bool = True
    # "pass": the seat stays silent in talk turns (only say/pass offered) without a model call;
    # the next prompt shows those turns in its history. For opponents that do not read talk.
    talk: str = "free"
    prompt: str = "turns"
    template: str = "paper"
    batch_size: int = 32
    cache_mb: int = 768
    batch_kv_mb: int = 384
    context: int = 0
    threads: int = 0
    dtype: str = "float32"
    stop_at_json: bool = True
    timeout: float = 60.0
    attempts: int = 5
    backoff: float = 1.0
    concurrency: int = 64
    api_key_env: str = "OPENAI_API_KEY"
    context_chars: int = 0
    adapter: str = ""
    head: str = ""
    think: int = 0
    structured: str = "auto"
    device: str = "auto"
    device_map: str = ""
    runtime: str = "torch"

    def __post_init__(self):
        if not self.max_new_tokens:
            self.max_new_tokens = DEFAULT_MAX_NEW_TOKENS + self.think

    def sampling(self) -> dict:
        """The generation settings recorded in each decision's meta."""
        return {"temperature": self.temperature, "top_p": self.top_p,
                "max_new_tokens": self.max_new_tokens, "seed": self.seed,
                "mode": self.mode, "constrained": self.constrained,
                # records without them stay as they were
                **({"think": self.think} if self.think else {}), **({"talk": self.talk} if self.talk != "free" else {}),
                **({"head": self.head} if self.head else {})}

    def to_dict(self) -> dict:
        return asdict(self)


def _shown(text: str) -> str:
    """An option's key or value as a message quotes it: at most 60 characters."""
    text = repr(text)
    return text if len(text) <= 60 else text[:57] + "..."


def _convert(name: str, text: str, kind):
    if kind is bool or kind == "bool":
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"option {name}={_shown(text)}: expected true/false")
    if kind not in (int, "int", "Optional[int]", float, "float"):
        return text
    try:
        if len(text) > 40:               # no option is that long; int() of a huge digit string is slow
            raise ValueError
        value = int(text) if kind in (int, "int", "Optional[int]") else float(text)
    except ValueError:
        raise ValueError(f"option {name}={_shown(text)}: expected a number") from None
    if not math.isfinite(value):         # nan compares false with every bound, so it would pass them
        raise ValueError(f"option {name}={_shown(text)}: expected a finite number")
    return value


def parse_options(options, seed: int = 0) -> LLMConfig:
    """An LLMConfig from a spec's options (:attr:`AgentSpec.options <socialgym_agents.specs.AgentSpec>`
    pairs, or the text ``key=value&...``); keys and values are URL-unquoted as ``parse_qsl`` does.
    A bad key or value raises ValueError naming what is valid."""
    config = LLMConfig(seed=seed)
    types = {f.name: f.type for f in fields(LLMConfig)}
    given = set()
    pairs = split_options(options) if isinstance(options, str) else options
    for key, value in ((unquote_plus(k), unquote_plus(v)) for k, v in pairs):
        if key not in types:
            raise ValueError(f"unknown LLM option {_shown(key)}; valid: {', '.join(sorted(types))}")
        if key in given:                 # which one was meant is not ours to guess
            raise ValueError(f"option {key} is given twice; give it once")
        setattr(config, key, _convert(key, value, types[key]))
        given.add(key)
    if "max_new_tokens" not in given:
        config.max_new_tokens = DEFAULT_MAX_NEW_TOKENS + max(0, config.think)
    validate(config)
    return config


def validate(config: LLMConfig) -> None:
    """ValueError naming the first option out of range and what would be valid."""
    choices = {"prompt": ("turns", "single"), "template": TEMPLATE_NAMES, "mode": MODES, "dtype": DTYPES, "talk": TALK_MODES,
               "structured": ("auto",) + STRUCTURED_LEVELS, "runtime": RUNTIMES}
    for name, valid in choices.items():
        if getattr(config, name) not in valid:
            raise ValueError(f"option {name}={getattr(config, name)!r}: expected one of {', '.join(valid)}")
    if config.device not in ("auto", "cpu") and not config.device.startswith("cuda"):
        raise ValueError(f"option device={config.device!r}: expected auto, cpu, cuda or cuda:N")
    if config.runtime != "torch" and runtime_conflict(config):
        raise ValueError(runtime_conflict(config))
    if config.dtype == "int8":
        from .loading import int8_device_error
        if int8_device_error(config.device, config.device_map):
            raise ValueError(int8_device_error(config.device, config.device_map))
    if config.temperature < 0 or not 0 < config.top_p <= 1 or config.max_new_tokens < 1 or config.max_retries < 0:
        raise ValueError("options need temperature >= 0, 0 < top_p <= 1, max_new_tokens >= 1, max_retries >= 0")
    if config.max_new_tokens > MAX_NEW_TOKENS_LIMIT:
        raise ValueError(f"option max_new_tokens={config.max_new_tokens}: expected at most {MAX_NEW_TOKENS_LIMIT} "
                         f"(a reply is a move, not a book)")
    minimum = {"concurrency": 1, "attempts": 1, "batch_size": 1, "think": 0, "backoff": 0, "cache_mb": 0,
               "batch_kv_mb": 1, "context": 0, "threads": 0, "context_chars": 0}
    for name, low in minimum.items():
        if getattr(config, name) < low:
            raise ValueError(f"option {name}={getattr(config, name)!r}: expected a number >= {low}")
    if not config.timeout > 0:
        raise ValueError(f"option timeout={config.timeout!r}: expected seconds > 0")
    if config.head and config.mode != "score":
        raise ValueError("option head= chooses among scored replies: it needs mode=score")
    if config.think:
        if config.max_new_tokens < config.think + ACTION_TOKENS_MIN:
            raise ValueError(f"option think={config.think} needs max_new_tokens >= think + {ACTION_TOKENS_MIN} "
                             f"(got {config.max_new_tokens}); leave max_new_tokens out for {DEFAULT_MAX_NEW_TOKENS} + think")
        if config.mode == "score":
            raise ValueError("option think= does not combine with mode=score (scoring ranks bare actions); "
                             "use mode=batched or mode=naive")


def runtime_conflict(config: LLMConfig) -> str:
    """Why ``config``'s other options cannot be honoured by a CPU runtime (``runtime=`` other than
    torch), or "": a runtime plays the int8 export of the base model on the CPU."""
    where = f"runtime={config.runtime} plays the int8 export of the base SmolLM2 on the CPU"
    if config.adapter:
        return f"option adapter= needs runtime=torch ({where}; an adapter is merged into PyTorch weights)"
    if config.dtype not in ("float32", "auto"):
        return (f"option dtype={config.dtype} needs runtime=torch ({where}, float32 activations; "
                f"leave dtype out or give dtype=auto)")
    if config.device not in ("auto", "cpu"):
        return f"option device={config.device} needs runtime=torch ({where})"
    if config.device_map:
        return f"option device_map={config.device_map} needs runtime=torch ({where})"
    if config.head:
        return f"option head= needs runtime=torch ({where}; the head reads PyTorch's hidden states)"
    return ""
