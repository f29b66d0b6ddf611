"""KV caches that grow in place (socialgym_agents.llm.kv_cache) against transformers' DynamicLayer."""
import torch
from transformers.cache_utils import DynamicLayer

from socialgym_agents.llm.kv_cache import RoomyCache, RoomyLayer, empty_cache, select_rows, stack_left_padded


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


def test_select_rows_and_left_padded_stacking():
    a, b = empty_cache([_kv(1, 0, 0)], 2, 4, 2), empty_cache([_kv(1, 0, 0)], 1, 2, 0)
    a.layers[0].key_buffer[:, :, :4] = _kv(2, 4, 1)[0]
    b.layers[0].key_buffer[:, :, :2] = _kv(1, 2, 2)[0]
    picked = select_rows(a, torch.tensor([1]), room=1)
    assert torch.equal(picked.layers[0].keys, a.layers[0].keys[1:])
    bigger = select_rows(b, torch.tensor([0]), room=5)               # b had no room: a new buffer
    assert bigger.layers[0].key_buffer.shape[2] == 7 and torch.equal(bigger.layers[0].keys, b.layers[0].keys)
    stacked = stack_left_padded([a, b], room=3)
    layer = stacked.layers[0]
    assert layer.length == 4 and layer.key_buffer.shape[2] == 7
    assert torch.equal(layer.keys[:2], a.layers[0].keys)
    assert torch.equal(layer.keys[2:, :, 2:], b.layers[0].keys) and not layer.keys[2:, :, :2].any()
    assert stack_left_padded([a], room=2) is a                       # already has the room
    assert isinstance(stacked, RoomyCache)


def test_prefill_passes_stay_within_the_token_budget():
    from types import SimpleNamespace

    from socialgym_agents.llm.hf_backend import PREFILL_TOKENS, _token_budget
    rows = [SimpleNamespace(ids=[0] * n, reuse=0, name=i) for i, n in enumerate([200] * 20 + [260] * 10 + [4000])]
    pieces = _token_budget(rows)
    assert sorted(r.name for piece in pieces for r in piece) == list(range(31))
    for piece in pieces:
        assert len(piece) == 1 or len(piece) * max(len(r.ids) for r in piece) <= PREFILL_TOKENS
    assert PREFILL_TOKENS != 3200 or [len(p) for p in pieces] == [16, 4 + 8, 2, 1]
