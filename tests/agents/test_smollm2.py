"""The embedded SmolLM2 through the batched runner vs the naive loop (greedy => same actions)."""
import pytest

from socialgym_agents import make_policy
from socialgym_agents.base import Request
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs

OPTS = "max_new_tokens=20&max_retries=0"


@pytest.fixture(scope="module")
def policies(smollm2_available):
    return make_policy(f"smollm2?{OPTS}"), make_policy(f"smollm2?{OPTS}&mode=naive")


def _actions(record):
    return [(t["agent"], t["raw"], t["action"]) for t in record["turns"]]


def test_greedy_batched_runner_matches_the_naive_loop(policies):
    batched, naive = policies
    jobs = [EpisodeJob("prisoners_dilemma", 7, ["llm", "llm"], config={"rounds": 2}),
            EpisodeJob("rock_paper_scissors", 7, ["llm", "scripted:random"], config={"rounds": 2})]
    fast = run_jobs(jobs, PolicyPool(prebuilt={"llm": batched}), max_concurrent_episodes=2)
    slow = [play_episode(job, PolicyPool(prebuilt={"llm": naive})) for job in jobs]
    assert all(r["finished"] for r in fast)
    for a, b in zip(fast, slow):
        assert _actions(a) == _actions(b)
    llm_turns = [t for r in fast for t in r["turns"] if "agent_meta" in t]
    assert llm_turns and all(t["agent_meta"]["model"] == "smollm2" for t in llm_turns)
    # Round 2 prompts extend round 1 prompts: the seat's KV cache was reused.
    assert batched.backend.stats["reused_tokens"] > 0
    assert naive.backend.stats["reused_tokens"] == 0


def test_context_overflow_trims_history_instead_of_crashing(smollm2_available):
    import socialgym_env
    policy = make_policy("smollm2?max_new_tokens=8&max_retries=0&context=420")
    env = socialgym_env.make("prisoners_dilemma", rounds=2)
    env.reset(seed=0)
    agent = env.agent_selection
    parts = dict(env.prompt_parts(agent), history=[f"[R1] Moderator: filler line {i} " * 3 for i in range(60)])
    decision = policy.act_batch([Request(("ep", agent), env.observe(agent), env.infos[agent], parts)])[0]
    assert decision.error is None
    assert decision.meta["history_omitted"] > 0
    prompt = decision.meta["attempts"][0]["prompt"]
    assert f"[... {decision.meta['history_omitted']} earlier messages omitted ...]" in prompt
    assert decision.meta["attempts"][0]["usage"]["prompt_tokens"] <= policy.backend.prompt_budget()


# ----------------------------------------------------------------------------- backend internals
def _backend(opts="max_new_tokens=24&constrained=0"):
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.hf_backend import HFBackend
    return HFBackend("smollm2", parse_options(opts))


def _user(text):
    return [{"role": "user", "content": text}]


def _batch_sizes(model):
    """Batch size of every forward pass of ``model`` from now on (a pre-hook on its forward)."""
    sizes = []
    handle = model.register_forward_pre_hook(lambda mod, args, kwargs: sizes.append(kwargs["input_ids"].shape[0]),
                                             with_kwargs=True)
    return sizes, handle


def test_finished_rows_leave_the_batch_and_keep_their_cache(smollm2_available):
    from socialgym_agents.llm.backend import Completion
    prompts = ['Reply with the JSON {"action_type": "go", "argument": ""} and nothing else.',
               "Write a long story about a dragon who learns to cook, in many sentences.",
               'Answer in JSON: {"action_type": "stay", "argument": ""}',
               "List ten animals that live in the sea, one per line, with a sentence about each."]
    items = [Completion(("ep", f"seat{i}"), _user(p)) for i, p in enumerate(prompts)]
    batched = _backend()
    sizes, handle = _batch_sizes(batched.model)
    try:
        together = batched.complete(items)
    finally:
        handle.remove()
    alone = [_backend().complete([item])[0] for item in items]
    assert [r.text for r in together] == [r.text for r in alone]
    new = [r.usage["new_tokens"] for r in together]
    assert min(new) < max(new) == 24          # one reply stops early, one runs to the budget
    assert min(sizes) < len(items)            # ... and the finished rows left the decode batch
    # A retired row's cache was kept: its seat's next turn reuses it and decodes as a fresh backend.
    short = min(range(len(items)), key=lambda i: new[i])
    follow = items[short].messages + [{"role": "assistant", "content": together[short].text},
                                      {"role": "user", "content": "And now the other one."}]
    again = batched.complete([Completion(items[short].key, follow)])[0]
    assert again.usage["reused_tokens"] > 0
    assert again.text == _backend().complete([Completion(("x", "y"), follow)])[0].text


def test_a_seats_first_prompt_reuses_the_description_another_seat_encoded(smollm2_available):
    import socialgym_env
    from socialgym_agents.llm.backend import Completion
    from socialgym_agents.llm.prompt import render_prompt
    env = socialgym_env.make("werewolves")
    env.reset(seed=3)
    first, second = env.possible_agents[:2]
    prompts = [render_prompt(env.prompt_parts(a), env.infos.get(a) or {}) for a in (first, second)]
    backend = _backend()
    backend.complete([Completion(("ep", first), _user(prompts[0]))])
    reply = backend.complete([Completion(("ep", second), _user(prompts[1]))])[0]
    description = len(backend.tokenizer.encode(env.prompt_parts(second)["description"]))
    assert reply.usage["reused_tokens"] >= description     # the shared description, at least
    assert reply.text == _backend().complete([Completion(("other", second), _user(prompts[1]))])[0].text


def test_dtype_option_loads_a_bfloat16_copy_and_plays_legally(smollm2_available):
    import torch
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.loading import resolve_dtype
    with pytest.raises(ValueError, match="dtype"):
        parse_options("dtype=float16")
    policy = make_policy(f"smollm2?{OPTS}&dtype=bfloat16")
    assert next(policy.backend.model.parameters()).dtype == torch.bfloat16
    assert next(_backend().model.parameters()).dtype == torch.float32     # the shared model is untouched
    auto = _backend("dtype=auto")
    if resolve_dtype("auto") == "int8":      # a CPU without native bfloat16: int8 Linear layers, float32 elsewhere
        from socialgym_agents.llm.int8 import int8_linears
        assert int8_linears(auto.model) and next(auto.model.parameters()).dtype == torch.float32
    else:
        assert next(auto.model.parameters()).dtype == getattr(torch, resolve_dtype("auto"))
    record = run_jobs([EpisodeJob("prisoners_dilemma", 5, ["llm", "llm"], config={"rounds": 2})],
                      PolicyPool(prebuilt={"llm": policy}))[0]
    assert record["finished"] and sum(record["invalid_actions"].values()) == 0
    assert all(t["agent_meta"]["attempts"][0].get("action") for t in record["turns"] if "agent_meta" in t)


def test_seats_asking_in_the_same_tick_encode_their_shared_description_once(smollm2_available):
    import socialgym_env
    from socialgym_agents.llm.backend import Completion
    from socialgym_agents.llm.prompt import render_prompt
    env = socialgym_env.make("werewolves")
    env.reset(seed=4)
    seats = env.possible_agents[:3]
    items = [Completion(("ep", a), _user(render_prompt(env.prompt_parts(a), env.infos.get(a) or {}))) for a in seats]
    backend = _backend()
    replies = backend.complete(items)
    description = len(backend.tokenizer.encode(env.prompt_parts(seats[0])["description"]))
    assert all(r.usage["reused_tokens"] >= description for r in replies)
    prompt_tokens = sum(r.usage["prompt_tokens"] for r in replies)
    assert backend.stats["encoded_tokens"] <= prompt_tokens - 2 * description   # encoded once, not three times
    assert [r.text for r in replies] == [_backend().complete([item])[0].text for item in items]


def test_scoring_seats_of_one_tick_encode_their_shared_description_once(smollm2_available):
    """mode=score: the same one-time encoding of the shared description as generation, and the
    same scores as scoring each seat alone."""
    import socialgym_env
    from socialgym_agents.llm.backend import Completion
    from socialgym_agents.llm.prompt import render_prompt
    env = socialgym_env.make("werewolves")
    env.reset(seed=4)
    seats = env.possible_agents[:3]
    items = [Completion(("ep", a), _user(render_prompt(env.prompt_parts(a), env.infos.get(a) or {}))) for a in seats]
    candidates = [['{"action_type": "pass", "argument": ""}', '{"action_type": "say", "argument": "I trust Vera"}']] * 3
    backend = _backend()
    scores = backend.score(items, candidates)
    description = len(backend.tokenizer.encode(env.prompt_parts(seats[0])["description"]))
    assert backend.stats["reused_tokens"] >= 3 * description
    assert backend.stats["encoded_tokens"] <= backend.stats["prompt_tokens"] - 2 * description
    alone = [_backend().score([item], [cands])[0] for item, cands in zip(items, candidates)]
    assert [x for row in scores for x in row] == pytest.approx([x for row in alone for x in row], abs=1e-3)


def test_rows_of_very_different_lengths_decode_in_separate_batches(smollm2_available):
    from socialgym_agents.llm.backend import Completion
    long_text = "Here is a long record of the game so far. " * 120 + 'Reply with {"action_type": "go", "argument": ""}.'
    items = [Completion(("ep", "short"), _user('Reply with {"action_type": "go", "argument": ""}.')),
             Completion(("ep", "long"), _user(long_text))]
    backend = _backend("max_new_tokens=8&constrained=0")
    sizes, handle = _batch_sizes(backend.model)
    try:
        together = backend.complete(items)
    finally:
        handle.remove()
    assert max(sizes) == 1            # a 20-token prompt is not padded to a 1,000-token one
    assert [r.text for r in together] == [_backend("max_new_tokens=8&constrained=0").complete([i])[0].text
                                          for i in items]


def test_shared_kv_attention_gives_transformers_sdpa_logits_under_padding(smollm2_available):
    """The loaded model's attention (SDPA with grouped KV heads, socialgym_agents.llm.loading) equals
    transformers' SDPA on a left-padded batch, and the padded row equals the row alone."""
    import torch
    from socialgym_agents.llm.loading import SHARED_KV_ATTENTION, load_model
    model, tokenizer = load_model("smollm2")
    assert model.config._attn_implementation == SHARED_KV_ATTENTION
    short = tokenizer.encode("Rock, paper or scissors?")
    long = tokenizer.encode("Each round both players choose at the same time to cooperate or defect.")
    pad = len(long) - len(short)
    ids = torch.tensor([[tokenizer.pad_token_id] * pad + short, long])
    mask = torch.tensor([[0] * pad + [1] * len(short), [1] * len(long)])
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    with torch.inference_mode():
        ours = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.float()
        alone = model(input_ids=torch.tensor([short])).logits.float()
        try:
            model.set_attn_implementation("sdpa")
            reference = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.float()
        finally:
            model.set_attn_implementation(SHARED_KV_ATTENTION)
    assert torch.allclose(ours, reference, atol=1e-3)
    assert torch.allclose(ours[0, pad:], alone[0], atol=1e-3)


def test_grouped_decode_attention_is_float32_attention_on_a_padded_batch():
    """A bfloat16 decode step's attention (one query token a row, 9 query heads on 3 key/value
    heads) equals float32 SDPA on the same inputs up to the output's bfloat16 rounding, with left
    padding as a boolean or an additive mask; a wrong head grouping is far off."""
    import torch
    import torch.nn.functional as F
    from socialgym_agents.llm.loading import grouped_decode_attention
    generator = torch.Generator().manual_seed(0)
    query, key, value = (torch.randn(shape, generator=generator).to(torch.bfloat16)
                         for shape in ((4, 9, 1, 64), (4, 3, 40, 64), (4, 3, 40, 64)))
    mask = torch.ones(4, 1, 1, 40, dtype=torch.bool)
    mask[0, ..., :25] = mask[2, ..., :39] = False          # left padding; row 2 attends to one key
    reference = F.scaled_dot_product_attention(query.float(), key.float(), value.float(), attn_mask=mask,
                                               enable_gqa=True).transpose(1, 2)
    additive = torch.zeros(4, 1, 1, 40).masked_fill(~mask, float("-inf"))
    for given in (mask, additive):
        out, _ = grouped_decode_attention(query, key, value, given)
        assert out.dtype == torch.bfloat16 and out.shape == (4, 1, 9, 64)
        assert torch.allclose(out.float(), reference, atol=2e-2, rtol=1e-2)
    assert torch.equal(grouped_decode_attention(query, key, value, mask)[0][2].float(),
                       value[2, :, -1].float().repeat_interleave(3, 0).to(torch.bfloat16).float()[None])
    interleaved = query.reshape(4, 3, 3, 1, 64).transpose(1, 2).reshape(4, 9, 1, 64)   # heads mapped wrongly
    assert not torch.allclose(grouped_decode_attention(interleaved, key, value, mask)[0].float(), reference,
                              atol=2e-2, rtol=1e-2)


def test_grouped_decode_is_off_on_a_cpu_with_amx_only():
    """The AMX path keeps SDPA (no AMX machine measured the change); other CPUs get the grouped
    decode attention, this machine as its flags say."""
    from socialgym_agents.llm import loading
    assert not loading.grouped_decode_default("flags\t: fpu avx512f avx512_bf16 amx_bf16 amx_tile\n")
    assert loading.grouped_decode_default("flags\t: fpu avx512f avx512_bf16 avx512_vnni\n")
    assert loading.grouped_decode_default("")
    assert loading.GROUPED_DECODE == loading.grouped_decode_default(loading.cpu_flags())


def test_bfloat16_decode_steps_use_the_grouped_path_and_agree_with_sdpa(smollm2_available, monkeypatch):
    """In the bfloat16 model a one-token step on a cache goes through grouped_decode_attention and
    its next-token logits agree with transformers' SDPA (same argmax, bfloat16-sized differences)."""
    import torch
    from socialgym_agents.llm import loading
    monkeypatch.setattr(loading, "GROUPED_DECODE", True)      # its default on a CPU without AMX
    model, tokenizer = loading.load_model("smollm2", "bfloat16")
    ids = torch.tensor([tokenizer.encode("Each round both players choose at the same time to cooperate or")])
    calls = []
    real = loading.grouped_decode_attention

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    def next_logits():
        with torch.inference_mode():
            out = model(input_ids=ids[:, :-1], use_cache=True)
            return model(input_ids=ids[:, -1:], cache=out.cache, use_cache=True).logits[0, -1].float()
    try:
        loading.grouped_decode_attention = counted
        ours = next_logits()
        model.set_attn_implementation("sdpa")
        reference = next_logits()
    finally:
        loading.grouped_decode_attention = real
        model.set_attn_implementation(loading.SHARED_KV_ATTENTION)
    assert len(calls) == model.config.num_hidden_layers            # every layer of the decode step
    assert int(ours.argmax()) == int(reference.argmax()) and float((ours - reference).abs().max()) < 0.5
