"""Trained PEFT (LoRA) adapters on top of a local model: ``smollm2?adapter=DIR``, ``hf:PATH?adapter=DIR``.

``DIR`` is what ``PeftModel.save_pretrained`` writes (``adapter_config.json`` plus the adapter
weights), e.g. the ``adapter/`` folder of ``socialgym_training/sft.py`` or ``socialgym_training/dpo.py``. The base
model is loaded as usual (:func:`socialgym_agents.llm.loading.load_model_copy`: a float32 copy of its
own), gets the adapter, the LoRA weights are merged in (``merge_and_unload``) and it is converted
to the policy's dtype (``dtype=int8``: its Linear layers quantised from the merged float32
weights, :mod:`socialgym_agents.llm.int8`): the result is a plain
transformers model, so decoding, batching and KV-cache reuse work unchanged and the shared base
model stays untouched (a fine-tuned policy can play against its own base in one process). Its
weights that the merge left equal to the base's (all but the LoRA's target layers: the
embeddings, the MLPs, the norms) are then the process-wide base copy's own tensors on that device
and in that dtype, not a second copy (:func:`socialgym_agents.llm.loading.share_unchanged`): for
SmolLM2 with a LoRA on the attention projections about four fifths of the copy.

Loaded once per process per (model, adapter folder), like the base models.
"""
from __future__ import annotations

import threading
from pathlib import Path

_ADAPTED: dict = {}
_LOCK = threading.Lock()


def adapter_folder(adapter: str) -> Path:
    """The adapter folder, checked: it must hold ``adapter_config.json`` (a PEFT save)."""
    folder = Path(adapter).expanduser().resolve()
    if not (folder / "adapter_config.json").is_file():
        from .loading import ModelNotAvailable
        raise ModelNotAvailable(f"adapter={adapter!r}: no adapter_config.json there; expected a folder written by "
                                "PeftModel.save_pretrained (e.g. the adapter/ folder of socialgym_training/sft.py)")
    return folder


def load_adapted(model_name: str, adapter: str, dtype: str = "float32", device: str = "cpu"):
    """(model, tokenizer): base model ``model_name`` with the LoRA adapter in ``adapter`` merged
    in, in ``dtype`` on ``device`` (merged in float32, then converted), its unchanged weights
    shared with the base's process-wide copy there."""
    import torch
    from .loading import INT8, host_int8_kernel, load_model, load_model_copy, share_unchanged
    from .packed import return_freed_memory
    folder = adapter_folder(adapter)
    key = (model_name, str(folder), dtype, device)
    with _LOCK:
        if key in _ADAPTED:
            return _ADAPTED[key]
        from peft import PeftModel
        base, tokenizer = load_model_copy(model_name)
        model = PeftModel.from_pretrained(base, str(folder), is_trainable=False)
        model = model.merge_and_unload()
        if dtype == INT8:           # quantised from the merged float32 weights, on the CPU
            from .int8 import quantize_int8
            model = quantize_int8(model, host_int8_kernel())
        else:
            model = model.to(getattr(torch, dtype)).to(device)
        model.eval()
        share_unchanged(model, load_model(model_name, dtype, device)[0])
        return_freed_memory()       # the merged float32 copy's pages (300 MB of RSS kept otherwise, int8)
        _ADAPTED[key] = (model, tokenizer)
        return _ADAPTED[key]
