"""KV caches that grow in place (socialgym_agents.llm.kv_cache) against transformers' DynamicLayer."""
import torch
from transformers.cache_utils import DynamicLayer

from socialgym_agents.llm.kv_cache import RoomyCache, RoomyLayer, empty_cache, keep_rows, select_rows, zero_cache


def _kv(batch, length, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 3, length, 4, generator=g), torch.randn(batch, 3, length, 4, generator=g)


def test_updates_write_in_place_and_match_concatenation():
    keys, values = _kv(2, 5, 0)
    roomy, plain = RoomyLayer(room=3), DynamicLayer()
    steps = [_kv(2, 5, 0), _kv(2, 1, 1), _kv(2, 1, 2), _kv(2, 1, 3), _kv(2, 2, 4)]   # the last overflows the room
    for k, v in steps:
        got, expected = roomy.update(k, v), plain.update(k, v)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
        assert roomy.get_seq_length() == plain.get_seq_length()
    buffer = roomy.key_buffer
    roomy.update(*_kv(2, 1, 5))
    assert roomy.key_buffer.data_ptr() == buffer.data_ptr()           # grew once, now has room again


def test_an_update_longer_than_the_room_left_grows_enough():
    """Room left but less than the update (a seat's cache extended by a whole new turn): the
    buffer grows to hold it, and the layer equals plain concatenation."""
    roomy, plain = RoomyLayer(room=4), DynamicLayer()
    for k, v in (_kv(1, 20, 0), _kv(1, 1, 1), _kv(1, 25, 2), _kv(1, 3, 3)):
        got, expected = roomy.update(k, v), plain.update(k, v)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    assert roomy.key_buffer.shape[2] >= roomy.length == 49


def test_select_rows_copies_and_keep_rows_compacts_in_place():
    a, b = empty_cache([_kv(1, 0, 0)], 3, 4, 2, torch.float32), empty_cache([_kv(1, 0, 0)], 1, 2, 0, torch.float32)
    a.layers[0].key_buffer[:, :, :4] = _kv(3, 4, 1)[0]
    a.layers[0].value_buffer[:, :, :4] = _kv(3, 4, 1)[1]
    b.layers[0].key_buffer[:, :, :2] = _kv(1, 2, 2)[0]
    picked = select_rows(a, torch.tensor([1]), room=1)
    assert torch.equal(picked.layers[0].keys, a.layers[0].keys[1:2])
    bigger = select_rows(b, torch.tensor([0]), room=5)               # b had no room: a new buffer
    assert bigger.layers[0].key_buffer.shape[2] == 7 and torch.equal(bigger.layers[0].keys, b.layers[0].keys)
    # the decode loop drops finished rows: the rest move up within the same buffer
    expected = [a.layers[0].keys[[0, 2]].clone(), a.layers[0].values[[0, 2]].clone()]
    buffer = a.layers[0].key_buffer
    kept = keep_rows(a, [0, 2])
    layer = kept.layers[0]
    assert isinstance(kept, RoomyCache) and layer.length == 4 and layer.key_buffer.shape[:3] == (2, 3, 6)
    assert torch.equal(layer.keys, expected[0]) and torch.equal(layer.values, expected[1])
    assert layer.key_buffer.data_ptr() == buffer.data_ptr()          # no second copy of the batch
    layer.update(*_kv(2, 2, 3))                                      # the room is still there
    assert layer.length == 6 and layer.key_buffer.data_ptr() == buffer.data_ptr()


def test_a_rounding_cache_holds_what_its_rounded_copy_holds_and_passes_it_on():
    """round_to: every key and value is written as its bfloat16 copy holds it (the buffers stay
    float32), whether the layer allocated its buffers, was given them, or was selected or
    compacted from another cache; a seat's bfloat16 copy then gives back exactly those numbers."""
    k, v = _kv(2, 5, 0)
    for cache in (RoomyCache(room=2, round_to=torch.bfloat16),
                  zero_cache(["cpu"], (2, 3, 0, 4), room=7, dtype=torch.float32, round_to=torch.bfloat16)):
        keys, values = cache.update(k, v, 0)
        assert keys.dtype == torch.float32 and not torch.equal(keys, k)
        assert torch.equal(keys, k.bfloat16().float()) and torch.equal(values, v.bfloat16().float())
        assert torch.equal(keys.bfloat16().float(), keys)               # a bfloat16 seat copy is exact
        for derived in (select_rows(cache, torch.tensor([1]), room=1), keep_rows(cache, [1])):
            more = _kv(1, 1, 9)
            got = derived.update(*more, 0)[0][:, :, -1:]
            assert torch.equal(got, more[0].bfloat16().float())
    plain = RoomyCache()
    assert torch.equal(plain.update(k, v, 0)[0], k)                      # no rounding unless asked


def test_zero_cache_is_zeros_with_its_filled_length_and_room():
    cache = zero_cache(["cpu", "cpu"], (2, 3, 5, 4), room=2, dtype=torch.bfloat16)
    assert len(cache.layers) == 2
    for layer in cache.layers:
        assert layer.length == 5 and layer.key_buffer.shape == (2, 3, 7, 4)
        assert layer.key_buffer.dtype == torch.bfloat16 and not layer.key_buffer.any() and not layer.value_buffer.any()


def test_prefill_passes_stay_within_the_token_budget():
    from types import SimpleNamespace

    from socialgym_agents.llm.batching import PREFILL_TOKENS, prefill_passes
    rows = [SimpleNamespace(ids=[0] * n, reuse=0, name=i) for i, n in enumerate([200] * 20 + [260] * 10 + [4000])]
    pieces = prefill_passes(rows)
    assert sorted(r.name for piece in pieces for r in piece) == list(range(31))
    for piece in pieces:
        assert len(piece) == 1 or len(piece) * max(len(r.ids) for r in piece) <= PREFILL_TOKENS
    assert PREFILL_TOKENS != 3200 or [len(p) for p in pieces] == [16, 4 + 8, 2, 1]
