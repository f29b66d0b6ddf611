"""``dtype=int8``: a model's ``nn.Linear`` layers computed in int8 on the CPU.

Each Linear's weights are stored as int8 with one scale per output channel; at every call each
input row (token) is quantised to int8 with its own scale, the product runs as an int8 x int8 ->
int32 matrix multiply (``torch._int_mm``: oneDNN's int8 GEMM on x86, VNNI where the CPU has it)
and is scaled back to float. A row's result depends on that row alone, so a batched pass gives
each row what it would get alone, as in float32. PyTorch's ``quantize_dynamic`` puts one scale
on all the activations of a pass instead: a little faster, but an outlier in any row (SmolLM2 has
large ones in some channels) coarsens every row: its next-token argmax equalled bfloat16's at 47%
of the positions of six games' first prompts, this layer's at 88% (tests/agents/test_llm_int8.py).

Everything else (embeddings, norms, attention) stays float32: on the 2-core AMD EPYC the
bfloat16 attention kernel made decode steps several times slower than in float32. The keys and
values are rounded to bfloat16 as the caches take them (``model.kv_round_to``,
socialgym_agents.llm.kv_cache), so a seat's cache is kept in bfloat16, half float32's memory for
the same tokens, and a re-encoded seat attends over the same numbers as a cached one; the rounding
is far finer than the weights' 7 or 8 bits. CPU only: the model is built and run on the CPU.

Two kernels compute the same per-row scheme (:func:`int8_kernel` picks one from the CPU's flags):

- ``onednn`` (``torch._int_mm``), where the CPU has VNNI (AVX512-VNNI, AVX-VNNI or AMX): int8
  weights of 8 bits (+-127).
- ``fbgemm`` (``torch.ops.quantized.linear_dynamic``, FBGEMM's u8 x s8 GEMM), on CPUs without
  VNNI (AVX2 only), where oneDNN's s8 x s8 product falls back to a reference loop about ten times
  slower than float32. FBGEMM takes one activation scale per call, so each row is first divided
  by its largest magnitude (every row then spans the same range and gets its own scale, as
  above) and its output multiplied back. Its AVX2 kernel adds u8 x s8 products in pairs into
  16-bit sums that saturate past 32,767, so the weights are kept to 7 bits (+-63): 2 x 255 x 63 =
  32,130 never saturates, and the activations keep all 8 bits. Next-token argmax against bfloat16
  on the int8 test's prompts, keys and values rounded as the caches keep them: 0.87 of the
  positions with either kernel (without that rounding FBGEMM's 0.85, oneDNN's 0.88; 8-bit
  weights with PyTorch's 7-bit activations: 0.79).
"""
from __future__ import annotations

import warnings

import torch

_TINY = 1e-12        # an all-zero row or channel gets this scale, not a division by zero
KERNELS = ("onednn", "fbgemm")
VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
LEVELS = {"onednn": 127, "fbgemm": 63}     # the weights' largest magnitude per kernel (see above)


def int8_kernel(flags: str) -> str:
    """The int8 kernel for a CPU with these Linux ``flags``: oneDNN's where it has VNNI, FBGEMM's
    elsewhere."""
    return "onednn" if any(flag in flags.split() for flag in VNNI_FLAGS) else "fbgemm"


class Int8Linear(torch.nn.Module):
    """``nn.Linear`` with int8 weights (symmetric, per output channel) and int8 activations
    (symmetric, per row, quantised at each call); float in, float out. ``kernel``: one of
    :data:`KERNELS`."""

    def __init__(self, linear: torch.nn.Linear, kernel: str):
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"unknown int8 kernel {kernel!r}; valid: {', '.join(KERNELS)}")
        self.kernel = kernel
        weight = linear.weight.detach().float()
        scale = weight.abs().amax(dim=1).clamp(min=_TINY) / LEVELS[kernel]
        self.in_features, self.out_features = linear.in_features, linear.out_features
        qweight = torch.round(weight / scale[:, None]).to(torch.int8)     # [out, in]
        self.register_buffer("scale", scale)
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach().float().clone(),
                                                                        requires_grad=False)
        # FBGEMM computes from its packed layout alone, so the plain int8 copy is not kept beside it
        self._packed = self._fbgemm_weights(qweight) if kernel == "fbgemm" else None
        self.register_buffer("weight_int8", None if kernel == "fbgemm" else qweight)

    @property
    def qweight(self) -> torch.Tensor:
        """The int8 weights, ``[out, in]`` (FBGEMM's kernel holds them packed only: unpacked here)."""
        if self._packed is None:
            return self.weight_int8
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.ops.quantized.linear_unpack(self._packed)[0].int_repr()

    def _fbgemm_weights(self, qweight: torch.Tensor):
        """``qweight`` in FBGEMM's packed layout."""
        zero_points = torch.zeros(self.out_features, dtype=torch.long)
        with warnings.catch_warnings():    # PyTorch flags its quantised tensors as deprecated; FBGEMM's op takes them
            warnings.simplefilter("ignore")
            quantised = torch._make_per_channel_quantized_tensor(qweight, self.scale.double(), zero_points, 0)
            return torch.ops.quantized.linear_prepack(quantised, None)

    def forward(self, x):
        rows = x.reshape(-1, self.in_features).float()
        row_scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=_TINY)
        if self._packed is not None:
            out = self._fbgemm(rows, row_scale)
        else:
            row_scale /= 127
            quantised = rows.div(row_scale).round_().to(torch.int8)    # in place: torch.round(t) took 20x as long
            out = torch._int_mm(quantised, self.weight_int8.t()).float().mul_(row_scale).mul_(self.scale)
        if self.bias is not None:
            out += self.bias
        return out.reshape(*x.shape[:-1], self.out_features).to(x.dtype)

    def same_as(self, other) -> bool:
        """Whether ``other`` is an Int8Linear computing exactly what this one does."""
        if not isinstance(other, Int8Linear) or self.kernel != other.kernel or (self.bias is None) != (other.bias is None):
            return False
        return torch.equal(self.qweight, other.qweight) and torch.equal(self.scale, other.scale) \
            and (self.bias is None or torch.equal(self.bias, other.bias))

    def nbytes(self) -> int:
        """Bytes this layer's weights hold: int8 weights (plain or FBGEMM's packed layout), scales, bias."""
        tensors = [self.scale] + [t for t in (self.weight_int8, self.bias) if t is not None]
        return self.packed_nbytes() + sum(t.numel() * t.element_size() for t in tensors)

    def packed_nbytes(self) -> int:
        """Bytes of FBGEMM's packed weights (no tensor to ask; 0 with oneDNN's kernel)."""
        return self.in_features * self.out_features if self._packed is not None else 0

    def _fbgemm(self, rows, row_scale):
        """``rows`` times the weights through FBGEMM. Each row is divided by its largest magnitude,
        and one more row holding -1 and +1 fixes the call's range at [-1, 1]: FBGEMM's one
        activation scale per call is then the same for every row, so a row's result does not
        depend on the others in the pass (as in the oneDNN kernel)."""
        unit = torch.empty(rows.shape[0] + 1, self.in_features)
        torch.div(rows, row_scale, out=unit[:-1])
        unit[-1] = 1.0
        unit[-1, 0] = -1.0
        return torch.ops.quantized.linear_dynamic(unit, self._packed, False)[:-1].mul_(row_scale)


def quantize_int8(model, kernel: str):
    """``model`` (float32, on the CPU) with every ``nn.Linear`` (attention projections, MLP, the
    output layer, tied to the embedding or not: the embedding keeps its float weights) replaced
    in place by an :class:`Int8Linear` computed by ``kernel`` (this CPU's:
    ``loading.host_int8_kernel()``)."""
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear):
            owner, _, attribute = name.rpartition(".")
            setattr(model.get_submodule(owner), attribute, Int8Linear(module, kernel))
    # The float tensors left (embedding, norms) may be views of the weights file as loaded
    # (safetensors maps it): copies of their own let the whole mapping go (513 MB of SmolLM2's
    # float32 file stayed resident beside the int8 layers otherwise).
    with torch.no_grad():
        for tensor in list(model.parameters()) + [b for b in model.buffers() if b.is_floating_point()]:
            tensor.data = tensor.data.clone()
    model.kv_round_to = torch.bfloat16       # its caches keep keys and values in bfloat16 (see above)
    return model


def int8_linears(model) -> dict:
    """The int8 Linear layers of ``model`` by name."""
    return {name: module for name, module in model.named_modules() if isinstance(module, Int8Linear)}
