"""``dtype=int8``: a model's ``nn.Linear`` layers computed in int8 on the CPU.

Each Linear's weights are stored as int8 with one scale per output channel; at every call each
input row (token) is quantised to int8 with its own scale, the product runs as an int8 x int8 ->
int32 matrix multiply (``torch._int_mm``: oneDNN's int8 GEMM on x86, VNNI where the CPU has it)
and is scaled back to float. A row's result depends on that row alone, so a batched pass gives
each row what it would get alone, as in float32. PyTorch's ``quantize_dynamic`` puts one scale
on all the activations of a pass instead: a little faster, but an outlier in any row (SmolLM2 has
large ones in some channels) coarsens every row: its next-token argmax equalled bfloat16's at 47%
of the positions of six games' first prompts, this layer's at 88% (tests/agents/test_llm_int8.py).

Everything else (embeddings, norms, attention, the K/V caches) stays float32: on the 2-core AMD
EPYC the bfloat16 attention kernel made decode steps several times slower than in float32.
CPU only: the model is built and run on the CPU.
"""
from __future__ import annotations

import torch

_TINY = 1e-12        # an all-zero row or channel gets this scale, not a division by zero


class Int8Linear(torch.nn.Module):
    """``nn.Linear`` with int8 weights (symmetric, per output channel) and int8 activations
    (symmetric, per row, quantised at each call); float in, float out."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        weight = linear.weight.detach().float()
        scale = weight.abs().amax(dim=1).clamp(min=_TINY) / 127
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("qweight", torch.round(weight / scale[:, None]).to(torch.int8))   # [out, in]
        self.register_buffer("scale", scale)
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach().float().clone(),
                                                                        requires_grad=False)

    def forward(self, x):
        rows = x.reshape(-1, self.in_features).float()
        row_scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=_TINY) / 127
        quantised = rows.div(row_scale).round_().to(torch.int8)    # in place: torch.round(t) took 20x as long
        out = torch._int_mm(quantised, self.qweight.t()).float().mul_(row_scale).mul_(self.scale)
        if self.bias is not None:
            out += self.bias
        return out.reshape(*x.shape[:-1], self.out_features).to(x.dtype)


def quantize_int8(model):
    """``model`` (float32, on the CPU) with every ``nn.Linear`` (attention projections, MLP, the
    output layer, tied to the embedding or not: the embedding keeps its float weights) replaced
    in place by an :class:`Int8Linear`."""
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear):
            owner, _, attribute = name.rpartition(".")
            setattr(model.get_submodule(owner), attribute, Int8Linear(module))
    return model


def int8_linears(model) -> dict:
    """The int8 Linear layers of ``model`` by name."""
    return {name: module for name, module in model.named_modules() if isinstance(module, Int8Linear)}
