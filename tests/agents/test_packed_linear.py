"""socialgym_agents.llm.packed: a bfloat16 model's Linear layers from weights packed once for
oneDNN compute bit for bit what ``F.linear`` does, hold each weight once, and stay shared where
an adapter shares its base's weights (issue 45: decode steps on a CPU without AMX)."""
import copy
import gc
import os
import weakref

import pytest
import torch
import torch.nn.functional as F

from socialgym_agents.llm import loading
from socialgym_agents.llm.packed import PackedLinear, pack_linears, packing_available

pytestmark = pytest.mark.skipif(not packing_available(), reason="this PyTorch has no oneDNN (mkldnn) linear")


@pytest.mark.parametrize("rows", [1, 8, 37, 300])
@pytest.mark.parametrize("bias", [False, True])
def test_a_packed_layer_computes_what_f_linear_does_bit_for_bit(rows, bias):
    generator = torch.Generator().manual_seed(rows)
    linear = torch.nn.Linear(576, 1536, bias=bias).to(torch.bfloat16)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(1536, 576, generator=generator) * 0.05)
    x = torch.randn(2, rows, 576, generator=generator).to(torch.bfloat16)     # [batch, tokens, features]
    packed = PackedLinear(linear)
    assert torch.equal(packed(x), F.linear(x, linear.weight, linear.bias))
    assert torch.equal(packed.dense(), linear.weight) and packed.same_as(linear)
    other = torch.nn.Linear(576, 1536, bias=bias).to(torch.bfloat16)
    assert not packed.same_as(other)                      # other values


def _bf16_copy():
    """A bfloat16 SmolLM2 of this test's own (the process-wide one may be packed already)."""
    return loading.load_model_copy("smollm2")[0].to(torch.bfloat16)


def _logits(model, ids):
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        step = model(input_ids=ids[:, -1:], cache=out.cache, use_cache=True,
                     position_ids=torch.tensor([[ids.shape[1]]]))
    return out.logits, step.logits


def test_a_packed_model_gives_the_same_logits_and_drops_its_plain_weights(smollm2_available):
    model, tokenizer = _bf16_copy(), loading.load_model("smollm2")[1]
    ids = torch.tensor([tokenizer.encode("Each round both players choose at the same time to cooperate or")])
    before = _logits(model, ids)
    plain = weakref.ref(model.model.layers[0].mlp.gate_proj.weight)
    layers = model.config.num_hidden_layers
    assert pack_linears(model) == 7 * layers          # q, k, v, o, gate, up, down of each layer
    gc.collect()
    assert plain() is None                            # the plain weight is gone: each weight held once
    assert type(model.lm_head) is torch.nn.Linear     # tied to the input embedding: left as it is
    after = _logits(model, ids)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])   # prefill and a decode step
    # a copy (load_model copies a CPU model to a GPU) is plain again, with the same weights
    copied = copy.deepcopy(model)
    assert type(copied.model.layers[0].mlp.gate_proj) is torch.nn.Linear
    assert torch.equal(copied.model.layers[0].mlp.gate_proj.weight, model.model.layers[0].mlp.gate_proj.dense())


def test_an_adapter_keeps_sharing_its_bases_unchanged_layers_whichever_is_packed_first(smollm2_available):
    def two_models():
        base, adapted = _bf16_copy(), _bf16_copy()
        with torch.no_grad():
            adapted.model.layers[0].self_attn.q_proj.weight.add_(0.01)     # the one layer a merge changed
        return base, adapted

    base, adapted = two_models()
    pack_linears(base)                                # the base packed before the adapter loads
    loading.share_unchanged(adapted, base)
    assert adapted.model.layers[1].mlp.up_proj is base.model.layers[1].mlp.up_proj
    assert type(adapted.model.layers[0].self_attn.q_proj) is torch.nn.Linear      # changed: its own
    pack_linears(adapted)
    assert adapted.model.layers[0].self_attn.q_proj is not base.model.layers[0].self_attn.q_proj

    base, adapted = two_models()
    loading.share_unchanged(adapted, base)            # shared while plain, then each packed
    pack_linears(base)
    pack_linears(adapted)
    assert adapted.model.layers[1].mlp.up_proj is base.model.layers[1].mlp.up_proj
    assert adapted.model.layers[0].self_attn.q_proj is not base.model.layers[0].self_attn.q_proj


def test_the_runner_packs_a_bfloat16_model_on_a_cpu_without_amx_only(smollm2_available, monkeypatch):
    from socialgym_agents.llm.config import LLMConfig
    from socialgym_agents.llm.hf_backend import HFBackend
    assert loading.PACK_LINEARS == loading.grouped_decode_default(loading.cpu_flags())
    assert not loading.grouped_decode_default("flags\t: fpu avx512_bf16 amx_bf16 amx_tile\n")
    monkeypatch.setattr(loading, "PACK_LINEARS", True)     # its default on a CPU without AMX
    packed = HFBackend("smollm2", LLMConfig(dtype="bfloat16"))
    assert isinstance(packed.model.model.layers[0].mlp.down_proj, PackedLinear)
    assert type(HFBackend("smollm2", LLMConfig(dtype="float32")).model.model.layers[0].mlp.down_proj) \
        is torch.nn.Linear


# A process that runs packed layers at 150 row counts, as prefill passes do: the RSS it gains.
_MANY_SHAPES = """
import os
import torch
import socialgym_agents.llm.loading  # noqa: F401  (its import bounds the kernel caches)
from socialgym_agents.llm.packed import PackedLinear
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
layers = [PackedLinear(torch.nn.Linear(576, n, bias=False).to(torch.bfloat16)) for n in (576, 1536)]
x = torch.ones(1600, 576, dtype=torch.bfloat16)
before = rss()
for rows in range(100, 1600, 10):
    for layer in layers:
        layer(x[:rows])
print(rss() - before)
"""


def _grown_by_many_shapes(**variables) -> int:
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in loading.KERNEL_CACHE_VARIABLES}
    done = subprocess.run([sys.executable, "-c", _MANY_SHAPES], env={**env, **variables}, capture_output=True,
                          text=True, check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not loading.PACK_LINEARS, reason="a CPU with AMX: the kernel caches are left as they were")
def test_kernels_for_many_row_counts_do_not_pile_up_in_memory():
    """oneDNN's and ideep's default caches (1,024 kernels each) keep a kernel per row count; the
    bound loading sets on import keeps a process that meets 150 row counts from growing with them."""
    unbounded = _grown_by_many_shapes(**{name: "1024" for name in loading.KERNEL_CACHE_VARIABLES})
    bounded = _grown_by_many_shapes()
    assert bounded < 64 * 2**20 and unbounded > 3 * bounded + 64 * 2**20, (bounded, unbounded)


def test_a_kernel_cache_bound_the_user_set_stands():
    environ = {"LRU_CACHE_CAPACITY": "256"}
    loading.limit_kernel_caches(environ, on=True)
    assert environ == {"LRU_CACHE_CAPACITY": "256", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": loading.KERNEL_CACHE_CAPACITY}
    untouched: dict = {}
    loading.limit_kernel_caches(untouched, on=False)      # a CPU with AMX
    assert untouched == {}
