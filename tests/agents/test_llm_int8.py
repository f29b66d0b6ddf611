"""``dtype=int8``: SmolLM2's Linear layers in int8 (socialgym_agents.llm.int8), the rest float32."""
import pytest

from socialgym_agents import make_policy
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs

OPTS = "max_new_tokens=20&max_retries=0&dtype=int8"
# Next-token argmax of int8 vs bfloat16 over the 1,041 positions of the prompts below: measured
# 0.88 of them (float32 vs bfloat16: 0.97), and 0.994 of those where bfloat16's top two are over
# 1 nat apart (float32: 1.0). One activation scale per pass instead of per row (as torch.ao's
# quantize_dynamic does): 0.54 and 0.71.
AGREE_ALL, AGREE_CLEAR, CLEAR_MARGIN = 0.80, 0.97, 1.0


@pytest.fixture(scope="module")
def int8_model(smollm2_available):
    from socialgym_agents.llm.loading import load_model
    return load_model("smollm2", "int8")


def test_every_linear_layer_is_int8_and_nothing_else(int8_model):
    import torch

    from socialgym_agents.llm.int8 import LEVELS, int8_kernel, int8_linears
    from socialgym_agents.llm.loading import cpu_flags, load_model
    model, _ = int8_model
    float32, _ = load_model("smollm2")
    linears = {name: module for name, module in float32.named_modules() if isinstance(module, torch.nn.Linear)}
    quantised = int8_linears(model)
    assert set(quantised) == set(linears) and len(linears) == 7 * model.config.num_hidden_layers + 1
    assert {layer.kernel for layer in quantised.values()} == {int8_kernel(cpu_flags())}
    assert not any(isinstance(module, torch.nn.Linear) for module in model.modules())
    for name, layer in quantised.items():
        assert layer.qweight.dtype == torch.int8 and layer.scale.shape == (layer.out_features,)
        # per output channel: each row's largest weight is +-127, and the rows decode back to
        # the float32 weights within half a step
        assert int(layer.qweight.abs().amax(dim=1).min()) == LEVELS[layer.kernel], name
        weight = linears[name].weight
        assert torch.all((layer.qweight.float() * layer.scale[:, None] - weight).abs() <= layer.scale[:, None] / 2 + 1e-7)
    floats = dict(model.named_parameters())
    assert floats and all(p.dtype == torch.float32 for p in floats.values())       # embeddings and norms
    assert "model.embed_tokens.weight" in floats and any("norm" in name for name in floats)
    # the float32 model held beside it is untouched, and shares the int8 model's embeddings and norms
    assert isinstance(float32.lm_head, torch.nn.Linear)
    assert model.get_input_embeddings().weight is float32.get_input_embeddings().weight
    assert load_model("smollm2", "int8")[0] is model                               # loaded once per process


def test_int8_is_cpu_only_and_said_so_before_loading(smollm2_available):
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.loading import ModelNotAvailable, load_model, resolve_device
    for bad in ("dtype=int8&device=cuda", "dtype=int8&device=cuda:1", "dtype=int8&device_map=auto"):
        with pytest.raises(ValueError, match="dtype=int8 runs on the CPU only"):
            parse_options(bad)
    with pytest.raises(ModelNotAvailable, match="CPU only"):
        load_model("smollm2", "int8", device="cuda")
    with pytest.raises(ModelNotAvailable, match="device_map"):
        load_model("smollm2", "int8", device_map="auto")
    assert resolve_device("auto", "int8") == resolve_device("cpu", "int8") == "cpu"
    assert parse_options("dtype=int8").dtype == "int8"


def _actions(record):
    return [(t["agent"], t["raw"], t["action"]) for t in record["turns"]]


def test_int8_plays_legally_batched_as_alone_and_the_same_seed_replays_alike(int8_model):
    jobs = [EpisodeJob("prisoners_dilemma", 7, ["llm", "llm"], config={"rounds": 2}),
            EpisodeJob("rock_paper_scissors", 7, ["llm", "scripted:random"], config={"rounds": 2})]
    batched = make_policy(f"smollm2?{OPTS}")
    assert batched.backend.model is int8_model[0]
    fast = run_jobs(jobs, PolicyPool(prebuilt={"llm": batched}), max_concurrent_episodes=2)
    assert all(r["finished"] and sum(r["invalid_actions"].values()) == 0 for r in fast)
    # each row is quantised on its own scale, so the batched runner decides as the naive loop
    naive = make_policy(f"smollm2?{OPTS}&mode=naive")
    assert [_actions(r) for r in fast] == [_actions(play_episode(job, PolicyPool(prebuilt={"llm": naive})))
                                           for job in jobs]
    sampled = f"smollm2?{OPTS}&temperature=1.0"
    first, again = ([_actions(r) for r in run_jobs(jobs, PolicyPool(prebuilt={"llm": make_policy(sampled, seed=3)}))]
                    for _ in range(2))
    assert first == again
    score = make_policy(f"smollm2?{OPTS}&mode=score")
    assert all(r["finished"] and sum(r["invalid_actions"].values()) == 0
               for r in run_jobs(jobs, PolicyPool(prebuilt={"llm": score})))


def _fixed_prompts(tokenizer):
    """The first prompt of seat 0 in three games (~1,200 tokens in all)."""
    import socialgym_env
    from socialgym_agents.llm.hf_backend import chat_ids
    from socialgym_agents.llm.prompt import render_prompt
    out = []
    for game in ("prisoners_dilemma", "liars_dice", "bargaining"):
        env = socialgym_env.make(game)
        env.reset(seed=1)
        agent = env.possible_agents[0]
        out.append(chat_ids(tokenizer, [{"role": "user", "content": render_prompt(env.prompt_parts(agent),
                                                                                 env.infos.get(agent) or {})}]))
    return out


def next_token_agreement(model, reference, prompts) -> tuple:
    """Share of the positions of ``prompts`` where ``model``'s next-token argmax is ``reference``'s,
    over all of them and over those where ``reference``'s top two are over CLEAR_MARGIN apart
    (``model`` attends over keys and values as the runner's caches keep them)."""
    import torch

    from socialgym_agents.llm.kv_cache import RoomyCache, kv_round_to
    same = clear = same_clear = total = 0
    with torch.inference_mode():
        for ids in prompts:
            # through the runner's cache: an int8 model's keys and values rounded as it rounds them
            ours = model(input_ids=torch.tensor([ids]), cache=RoomyCache(round_to=kv_round_to(model)),
                         use_cache=True).logits[0].float()
            theirs = torch.log_softmax(reference(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
            top = theirs.topk(2).values
            agree = ours.argmax(-1) == theirs.argmax(-1)
            wide = top[:, 0] - top[:, 1] > CLEAR_MARGIN
            same, total = same + int(agree.sum()), total + len(ids)
            clear, same_clear = clear + int(wide.sum()), same_clear + int((agree & wide).sum())
    return same / total, same_clear / clear


def test_int8_next_tokens_agree_with_bfloat16_on_most_positions(int8_model):
    import copy

    import torch

    from socialgym_agents.llm.int8 import Int8Linear
    from socialgym_agents.llm.loading import load_model
    model, tokenizer = int8_model
    bfloat16, _ = load_model("smollm2", "bfloat16")
    prompts = _fixed_prompts(tokenizer)
    every, clear = next_token_agreement(model, bfloat16, prompts)
    assert every >= AGREE_ALL and clear >= AGREE_CLEAR

    class OneScalePerPass(Int8Linear):
        """The activations of a whole pass on one scale (an outlier in one row coarsens all)."""

        def forward(self, x):
            rows = x.reshape(-1, self.in_features).float()
            step = rows.abs().amax().clamp(min=1e-12) / 127
            out = torch._int_mm(rows.div(step).round_().to(torch.int8), self.qweight.t()).float() * step * self.scale
            return out.reshape(*x.shape[:-1], self.out_features)

    coarse = copy.deepcopy(model)
    for module in coarse.modules():
        if type(module) is Int8Linear:
            module.__class__ = OneScalePerPass
    assert next_token_agreement(coarse, bfloat16, prompts)[0] < AGREE_ALL     # the bound tells them apart


def test_the_int8_kernel_follows_the_cpu_flags():
    from socialgym_agents.llm.int8 import int8_kernel
    assert int8_kernel("fpu sse avx2 fma") == "fbgemm"                     # AVX2 only: Zen 3, Haswell
    assert int8_kernel("avx2 avx512f avx512_vnni avx512_bf16") == "onednn"  # Zen 4
    assert int8_kernel("avx2 avx_vnni") == "onednn" and int8_kernel("avx2 amx_int8") == "onednn"


@pytest.mark.parametrize("kernel", ["onednn", "fbgemm"])
def test_each_kernel_computes_a_row_alone_close_to_float32_with_its_bias_once(kernel):
    """Both kernels: a row's output is bit for bit what it gets alone (a row with 100x larger
    values beside it changes nothing), within 3% of float32's, the bias added once; FBGEMM's
    weights kept to 7 bits (its AVX2 products would saturate at 8)."""
    import torch

    from socialgym_agents.llm.int8 import LEVELS, Int8Linear
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 40)
    with torch.no_grad():
        linear.bias.mul_(50)          # a bias a row's scale must not touch
    layer = Int8Linear(linear, kernel)
    rows = torch.randn(6, 96)
    rows[2] *= 100
    with torch.no_grad():
        batched, exact = layer(rows), linear(rows)
        for k in range(len(rows)):
            assert torch.equal(layer(rows[k:k + 1]), batched[k:k + 1]), k
    error = (batched - exact).norm(dim=1) / exact.norm(dim=1)
    assert float(error.max()) < 0.03, error
    assert int(layer.qweight.abs().amax()) == LEVELS[kernel] and int(layer.qweight.abs().amax(dim=1).min()) == LEVELS[kernel]


def test_the_other_kernel_also_agrees_with_bfloat16_on_most_positions(int8_model):
    """The kernel this CPU does not pick, on the same prompts and bounds as the host's."""
    from socialgym_agents.llm.int8 import KERNELS, int8_kernel, int8_linears, quantize_int8
    from socialgym_agents.llm.loading import cpu_flags, load_model, load_model_copy
    other = next(kernel for kernel in KERNELS if kernel != int8_kernel(cpu_flags()))
    model = quantize_int8(load_model_copy("smollm2")[0], other).eval()
    assert {layer.kernel for layer in int8_linears(model).values()} == {other}
    bfloat16, tokenizer = load_model("smollm2", "bfloat16")
    every, clear = next_token_agreement(model, bfloat16, _fixed_prompts(tokenizer))
    assert every >= AGREE_ALL and clear >= AGREE_CLEAR


def test_auto_plays_int8_only_where_the_cpu_lacks_native_bfloat16(monkeypatch):
    from socialgym_agents.llm.loading import CPU_FLAGS_ENV, host_int8_kernel, resolve_dtype
    monkeypatch.setenv(CPU_FLAGS_ENV, "fpu avx avx2 fma")                        # Zen 3
    assert resolve_dtype("auto") == "int8" and host_int8_kernel() == "fbgemm"
    monkeypatch.setenv(CPU_FLAGS_ENV, "avx2 avx512f avx512_vnni avx512_bf16")   # Zen 4
    assert resolve_dtype("auto") == "bfloat16" and host_int8_kernel() == "onednn"
    assert resolve_dtype("float32") == "float32"


def test_quantising_lets_the_weights_file_mapping_go_and_keeps_packed_weights_once(smollm2_available):
    """The float tensors left after quantising (embedding, norms) are copies of their own, not
    views of the float32 weights file as loaded (which kept all 513 MB of it resident), and an
    FBGEMM layer holds its packed weights alone (its int8 values read back from them)."""
    import torch

    from socialgym_agents.llm.int8 import Int8Linear, int8_linears, quantize_int8
    from socialgym_agents.llm.loading import _load_fresh

    def mapped_ranges() -> list:
        spans = []
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().endswith(".safetensors"):
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    spans.append((start, end))
        return spans

    fresh, _ = _load_fresh("smollm2")          # from the file (a held float32 copy would not be mapped)
    assert any(a <= fresh.get_input_embeddings().weight.data_ptr() < b for a, b in mapped_ranges())
    model = quantize_int8(fresh, "fbgemm")
    spans = mapped_ranges()
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        assert not any(a <= tensor.data_ptr() < b for a, b in spans), name
    layer = next(iter(int8_linears(model).values()))
    assert isinstance(layer, Int8Linear) and layer.weight_int8 is None
    assert layer.qweight.dtype == torch.int8 and int(layer.qweight.abs().amax()) == 63
    assert layer.nbytes() == layer.in_features * layer.out_features + 4 * layer.out_features \
        + (0 if layer.bias is None else 4 * layer.out_features)

