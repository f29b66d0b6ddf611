"""What bounds the local backend's memory: one copy of the weights per dtype, the K/V budget of a
decode batch (``batch_kv_mb``) and of the per-seat caches (``cache_mb``); decisions do not
depend on either budget."""
import pytest

from socialgym_agents.llm.backend import Completion


def _backend(opts):
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.hf_backend import HFBackend
    return HFBackend("smollm2", parse_options(opts))


def _first_prompts(seats=4):
    """The first prompts of ``seats`` werewolves seats (~600 tokens each)."""
    import socialgym_env
    from socialgym_agents.llm.prompt import render_prompt
    env = socialgym_env.make("werewolves")
    env.reset(seed=4)
    return [Completion(("ep", a), [{"role": "user", "content": render_prompt(env.prompt_parts(a), env.infos.get(a) or {})}])
            for a in env.possible_agents[:seats]]


def _complete_measured(backend, items) -> tuple:
    """``backend.complete(items)``, the row counts of its decode steps, and the most bytes of
    decode-batch K/V alive at once."""
    from socialgym_agents.llm import kv_cache
    sizes = []
    handle = backend.model.register_forward_pre_hook(
        lambda mod, args, kwargs: sizes.append(kwargs["input_ids"].shape[0]) if kwargs["input_ids"].shape[1] == 1 else None,
        with_kwargs=True)
    kv_cache.reset_peak()
    try:
        replies = backend.complete(items)
    finally:
        handle.remove()
    return replies, sizes, kv_cache.LIVE["peak_bytes"]


def test_decode_batches_fit_the_kv_budget_and_decide_alike(smollm2_available):
    items = _first_prompts()
    opts = "max_new_tokens=8&constrained=0"
    roomy = _backend(opts + "&batch_kv_mb=4096")
    row_bytes = (len(roomy._prompt_ids(items[0])[0]) + 8 + 48) * roomy.kv_bytes_per_token()
    budget_mb = -(-2 * row_bytes // 2**20) + 2          # room for two rows of the four, not three
    tight = _backend(f"{opts}&batch_kv_mb={budget_mb}&cache_mb=4096")
    replies, sizes, peak = _complete_measured(tight, items)
    assert sizes and max(sizes) == 2                    # four rows, decoded two by two
    # A batch's rows are prefilled into its one buffer and retired within it: one copy at a time.
    assert peak <= budget_mb * 2**20
    assert [r.text for r in replies] == [r.text for r in roomy.complete(items)]


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_seat_caches_stay_within_cache_mb_and_an_evicted_seat_decides_alike(smollm2_available, dtype):
    """int8: the seat caches keep bfloat16 keys and values (half float32's bytes a token), and a
    re-encoded seat still decides as a cached one (the caches round what they are given)."""
    import torch
    items = _first_prompts(3)
    opts = f"max_new_tokens=8&constrained=0&dtype={dtype}"
    roomy = _backend(opts)
    kept = torch.bfloat16 if dtype == "int8" else torch.float32
    seat_bytes = len(roomy._prompt_ids(items[0])[0]) * roomy.kv_bytes_per_token() * kept.itemsize // 4
    budget_mb = -(-seat_bytes * 3 // 2 // 2**20)        # one seat's cache fits, two do not
    tight = _backend(f"{opts}&cache_mb={budget_mb}")
    first = tight.complete(items)
    assert tight._cache_bytes <= budget_mb * 2**20 and len(tight._seat_cache) == 1
    assert all(k.dtype == v.dtype == kept for _, kv, _ in tight._seat_cache.values() for k, v in kv)
    assert tight.stats["seat_cache_peak_bytes"] <= budget_mb * 2**20
    assert [r.text for r in first] == [r.text for r in roomy.complete(items)]
    # the next turn of each seat: the evicted ones re-encode, the decisions are the same
    follow = [Completion(item.key, item.messages + [{"role": "assistant", "content": reply.text},
                                                    {"role": "user", "content": "Again, please."}])
              for item, reply in zip(items, first)]
    assert [r.text for r in tight.complete(follow)] == [r.text for r in roomy.complete(follow)]
    assert tight.stats["reused_tokens"] < roomy.stats["reused_tokens"]


def test_prefill_groups_write_into_their_decode_batch_without_a_merged_copy(smollm2_available):
    """A seat's short next turn and another seat's long first prompt are prefilled apart (their
    new suffixes differ) and decoded as one batch: the batch's K/V are allocated once, and the
    groups write into it (no cache per group copied into a merged one)."""
    items = _first_prompts(2)
    opts = "max_new_tokens=8&constrained=0"
    backend = _backend(opts)
    first = backend.complete(items[:1])
    tick = [Completion(items[0].key, items[0].messages + [{"role": "assistant", "content": first[0].text},
                                                          {"role": "user", "content": "Again, please."}]),
            items[1]]
    rows = backend._rows(tick)
    suffixes = sorted(len(r.ids) - r.reuse for r in rows)
    assert suffixes[1] > 2 * suffixes[0]                                 # two prefill groups
    replies, sizes, peak = _complete_measured(backend, tick)
    assert sizes and max(sizes) == 2                                     # one decode batch
    room = 8 + 48                                                        # max_new_tokens + GUIDED_EXTRA
    assert peak <= 2 * (max(len(r.ids) for r in rows) + room) * backend.kv_bytes_per_token()
    alone = _backend(opts + "&cache_mb=0")
    assert [r.text for r in replies] == [r.text for r in alone.complete(tick)]


def test_a_seat_cache_leaves_the_store_once_copied_into_its_tick(smollm2_available):
    """A seat's cached context is copied into the tick's batch, then dropped from the store (its
    extended cache is stored after the tick): the tick does not hold it twice."""
    items = _first_prompts(2)
    backend = _backend("max_new_tokens=8&constrained=0")
    first = backend.complete(items)
    held_at_prefill = []
    handle = backend.model.register_forward_pre_hook(
        lambda mod, args, kwargs: held_at_prefill.append({k for k in backend._seat_cache if k[0] == "ep"})
        if kwargs["input_ids"].shape[1] > 1 else None, with_kwargs=True)
    follow = [Completion(item.key, item.messages + [{"role": "assistant", "content": reply.text},
                                                    {"role": "user", "content": "Again, please."}])
              for item, reply in zip(items, first)]
    try:
        backend.complete(follow)
    finally:
        handle.remove()
    assert held_at_prefill and held_at_prefill[-1] == set()
    assert backend.stats["reused_tokens"] > 0                         # the turns did reuse their caches
    assert {k for k in backend._seat_cache if k[0] == "ep"} == {item.key for item in items}


def test_a_bfloat16_load_keeps_no_float32_copy(smollm2_available, monkeypatch):
    import torch

    from socialgym_agents.llm import loading
    monkeypatch.setattr(loading, "_MODELS", {})
    model, _ = loading.load_model("smollm2", "bfloat16")
    assert list(loading._MODELS) == [("smollm2", "bfloat16")]
    assert next(model.parameters()).dtype == torch.bfloat16
    own, _ = loading.load_model_copy("smollm2")        # a caller's own float32 copy, not held here
    assert next(own.parameters()).dtype == torch.float32 and list(loading._MODELS) == [("smollm2", "bfloat16")]
    assert loading.load_model("smollm2", "bfloat16")[0] is model


@pytest.mark.parametrize("bad", ["batch_kv_mb=0", "batch_kv_mb=x"])
def test_a_bad_batch_kv_budget_is_one_clear_error(bad):
    from socialgym_agents.llm.config import parse_options
    with pytest.raises(ValueError, match="batch_kv_mb"):
        parse_options(bad)


def test_scoring_passes_fit_the_kv_budget_and_score_alike(smollm2_available):
    """Scoring mode gives every candidate row its own copy of its prompt's cache: unbounded, 32
    rows after a 700-token prompt copied 1 GB of float32 keys and values per pass."""
    from socialgym_agents.llm import kv_cache
    items = _first_prompts(2)
    candidates = [[f'{{"action": "vote", "target": "player_{k}"}}' for k in range(6)]] * 2
    roomy = _backend("mode=score&batch_kv_mb=4096")
    row_bytes = (len(roomy._prompt_ids(items[0])[0]) + 16) * roomy.kv_bytes_per_token()
    budget_mb = -(-3 * row_bytes // 2**20) + 1          # three candidate rows a pass, not twelve
    tight = _backend(f"mode=score&batch_kv_mb={budget_mb}&cache_mb=4096")
    rows = []
    handle = tight.model.register_forward_pre_hook(
        lambda mod, args, kwargs: rows.append(kwargs["input_ids"].shape), with_kwargs=True)
    kv_cache.reset_peak()
    try:
        tight_scores = tight.score(items, candidates)
    finally:
        handle.remove()
    candidate_passes = [shape[0] for shape in rows if shape[1] < 16]
    assert candidate_passes and max(candidate_passes) <= 3
    tight_peak = kv_cache.LIVE["peak_bytes"]
    kv_cache.reset_peak()
    roomy_scores = roomy.score(items, candidates)
    # the roomy pass copies all twelve rows' prompts at once, the tight ones three at a time
    assert kv_cache.LIVE["peak_bytes"] - tight_peak >= 4 * row_bytes
    for got, want in zip(tight_scores, roomy_scores):
        assert got == pytest.approx(want, abs=1e-3)
