"""A bfloat16 model's ``nn.Linear`` layers on a CPU, with their weights packed once for oneDNN.

``F.linear`` on a bfloat16 weight hands oneDNN the plain ``[out, in]`` matrix at every call, and
oneDNN reorders it into its blocked layout each time; a decode step multiplies a few rows by every
weight of the model, so the reorders are a large part of its cost. :class:`PackedLinear` holds the weight in
oneDNN's layout instead (PyTorch's ``mkldnn._reorder_linear_weight``, the packing its own compiler
uses for CPU linears), so the model holds each weight once, and computes with oneDNN's linear
kernel on it: the same numbers, so every output is bit for bit ``F.linear``'s
(tests/agents/test_packed_linear.py). On the 2-core AMD EPYC (avx512_bf16, no AMX),
``socialgym_benchmarks/perf/cpu_peak.py --tokens 8 --dtypes bfloat16,bfloat16-packed`` gave the
gate/up matmuls 71 GFLOP/s against 48 at a decode step's 8 rows, and two of the main job's games
played 12% faster with the same episodes (docs/benchmarks.md). The input embedding's weight,
which a tied output layer shares, stays as it is.

Packing is for inference: a packed layer has no ``weight`` parameter to train. It is done by
:func:`pack_linears` where the runner loads a bfloat16 model on a CPU without AMX
(``loading.GROUPED_DECODE``'s rule: the AMX path stays as it was measured). A weight shared by
two models (an adapter's unchanged layers, ``loading.share_unchanged``) is packed once and its
packed layer shared.
"""
from __future__ import annotations

import ctypes
import functools
import weakref

import torch

from .int8 import Int8Linear

# The decode batch's size as oneDNN's layout hint (any number of rows computes the same numbers).
ROWS_HINT = 8
# id(plain weight) -> (a weak reference to it, the PackedLinear made from it), while any module still
# holds that weight (a WeakKeyDictionary would compare two tensors' values with ==)
_PACKED: dict = {}


@functools.lru_cache(maxsize=None)
def packing_available() -> bool:
    """Whether this PyTorch and CPU run oneDNN's packed bfloat16 linear (CPU builds with mkldnn;
    tried once on a small layer, so a CPU whose oneDNN lacks it keeps plain weights)."""
    if not (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")):
        return False
    try:
        layer = torch.nn.Linear(16, 16, bias=False).to(torch.bfloat16)
        x = torch.ones(2, 16, dtype=torch.bfloat16)
        return torch.equal(PackedLinear(layer)(x), torch.nn.functional.linear(x, layer.weight))
    except RuntimeError:
        return False


class PackedLinear(torch.nn.Module):
    """``nn.Linear`` whose bfloat16 weight is kept in oneDNN's blocked layout."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # a plain attribute, not a buffer: an opaque oneDNN tensor has no values to compare or save
        self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), ROWS_HINT)
        self.bias = linear.bias

    def forward(self, x):
        rows = x.reshape(-1, self.in_features)
        out = torch.ops.mkldnn._linear_pointwise(rows, self.packed, self.bias, "none", [], "")
        return out.reshape(*x.shape[:-1], self.out_features)

    def dense(self) -> torch.Tensor:
        """The weight as a plain ``[out, in]`` tensor (a new one; for comparisons)."""
        return self.packed.to_dense()

    def same_as(self, linear: torch.nn.Linear) -> bool:
        """Whether ``linear`` computes what this layer does (same weight and bias values)."""
        if (linear.in_features, linear.out_features) != (self.in_features, self.out_features) \
                or linear.weight.dtype != self.packed.dtype or linear.weight.device.type != "cpu":
            return False
        if (linear.bias is None) != (self.bias is None) or \
                (self.bias is not None and not torch.equal(linear.bias, self.bias)):
            return False
        return torch.equal(self.dense(), linear.weight)

    def __deepcopy__(self, memo) -> torch.nn.Linear:
        """A plain ``nn.Linear`` with this weight: oneDNN's opaque tensor cannot be copied, and a
        copy may go where packing does not apply (``load_model`` copies a CPU model to a GPU)."""
        linear = torch.nn.Linear(self.in_features, self.out_features, bias=self.bias is not None,
                                 dtype=self.packed.dtype)
        with torch.no_grad():
            linear.weight.copy_(self.dense())
            if self.bias is not None:
                linear.bias.copy_(self.bias)
        return linear

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed"


def packed_weights(model) -> list:
    """The packed weights ``model`` holds (not among its parameters or buffers)."""
    return [module.packed for module in model.modules() if isinstance(module, PackedLinear)]


def weight_bytes(*models) -> int:
    """Bytes of the weights ``models`` hold: their parameters and buffers (an int8 model's Linear
    weights are buffers) and packed weights, each storage counted once."""
    held = {}
    for model in models:
        for tensor in list(model.parameters()) + list(model.buffers()):
            held[("plain", tensor.untyped_storage().data_ptr())] = tensor.untyped_storage().nbytes()
        for tensor in packed_weights(model):       # oneDNN's opaque tensors have no storage to ask
            held[("packed", id(tensor))] = tensor.element_size() * tensor.nelement()
        for module in model.modules():             # FBGEMM's int8 weights (socialgym_agents.llm.int8)
            if isinstance(module, Int8Linear) and module.packed_nbytes():
                held[("packed", id(module))] = module.packed_nbytes()
    return sum(held.values())


def pack_linears(model) -> int:
    """Replace every bfloat16 ``nn.Linear`` of ``model`` (on the CPU) by a :class:`PackedLinear`,
    but one whose weight the input embedding shares; returns how many layers it replaced. A
    weight already packed for another model gets that model's packed layer."""
    tied = model.get_input_embeddings().weight
    replaced = 0
    for owner in list(model.modules()):
        for name, child in list(owner.named_children()):
            if type(child) is not torch.nn.Linear or child.weight is tied or child.weight.dtype != torch.bfloat16 \
                    or child.weight.device.type != "cpu":
                continue
            packed = _packed_from(child)
            setattr(owner, name, packed)
            replaced += 1
    if replaced:
        return_freed_memory()
    return replaced


def _packed_from(linear: torch.nn.Linear) -> PackedLinear:
    """The packed layer of ``linear``'s weight: the one made before for that weight, or a new one."""
    key = id(linear.weight)
    weight_ref, packed = _PACKED.get(key, (None, None))
    if weight_ref is None or weight_ref() is not linear.weight:
        packed = PackedLinear(linear)
        _PACKED[key] = (weakref.ref(linear.weight, lambda _, key=key: _PACKED.pop(key, None)), packed)
    return packed


def return_freed_memory() -> None:
    """Give the freed plain weights' pages back to the system (glibc keeps freed blocks of this
    size in its heap, so RSS stayed up by the weights just freed: packed here, quantised to int8,
    an adapter's merged copy). Elsewhere a no-op."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):
        pass
