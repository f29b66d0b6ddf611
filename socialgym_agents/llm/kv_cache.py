"""Key/value caches for the batched runner that grow in place.

transformers' ``DynamicLayer`` appends a forward pass's new keys and values with ``torch.cat``,
which copies the whole cache of the layer: once per layer per decode step, and once more when a
``DynamicCache`` is built from tensors. Here a layer keeps a buffer with spare room along the
sequence; ``update`` writes the new tokens into it and exposes the filled part as a view, so a
decode step copies one token.
The buffers are allocated once per tick with the room the tick's decoding may need.

A cache may round what it is given to a coarser dtype as it writes it (``round_to``; an int8
model's caches round to bfloat16, :func:`kv_round_to`): every key and value attended over is then
one that a ``round_to`` copy holds exactly, whether this pass computed it or a seat's cache kept
it, so a seat's cache can be kept at half the size and a re-encoded seat attends over the same
numbers as a cached one.

:data:`LIVE` counts the bytes of the buffers alive now and the most ever alive at once (the
memory of the batches in flight, beside the weights and the per-seat caches; the memory
benchmark reports it).
"""
from __future__ import annotations

import functools
import weakref
from typing import Optional

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer


LIVE = {"bytes": 0, "peak_bytes": 0}


def _untrack(nbytes: int) -> None:
    LIVE["bytes"] -= nbytes


def _tracked(buffer: torch.Tensor) -> torch.Tensor:
    """``buffer``, counted in :data:`LIVE` until it is freed."""
    nbytes = buffer.element_size() * buffer.nelement()
    LIVE["bytes"] += nbytes
    LIVE["peak_bytes"] = max(LIVE["peak_bytes"], LIVE["bytes"])
    weakref.finalize(buffer, _untrack, nbytes)
    return buffer


def reset_peak() -> None:
    LIVE["peak_bytes"] = LIVE["bytes"]


class RoomyLayer(DynamicLayer):
    """A ``DynamicLayer`` over ``(batch, heads, capacity, dim)`` buffers of which the first
    ``length`` positions are filled; ``keys``/``values`` are views of those. Without buffers
    it allocates them at the first update, with ``room`` positions to spare."""

    def __init__(self, key_buffer: Optional[torch.Tensor] = None, value_buffer: Optional[torch.Tensor] = None,
                 length: int = 0, room: int = 0, round_to: Optional[torch.dtype] = None):
        super().__init__()
        self.key_buffer, self.value_buffer, self.length, self.room = key_buffer, value_buffer, length, room
        self.round_to = round_to
        if key_buffer is not None:
            self.device, self.is_initialized = key_buffer.device, True
            self._expose()

    def _expose(self) -> None:
        self.keys = self.key_buffer[:, :, :self.length]
        self.values = self.value_buffer[:, :, :self.length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if self.key_buffer is None:
            batch, heads, tokens, dim = key_states.shape
            self.key_buffer = _tracked(key_states.new_empty(batch, heads, tokens + self.room, dim))
            self.value_buffer = _tracked(value_states.new_empty(batch, heads, tokens + self.room, dim))
            self.device, self.is_initialized = key_states.device, True
        if self.round_to is not None:     # written back into the buffer's dtype exactly as rounded
            key_states, value_states = key_states.to(self.round_to), value_states.to(self.round_to)
        end = self.length + key_states.shape[2]
        if end > self.key_buffer.shape[2]:       # out of room (not planned for): grow by half
            extra = max(end - self.length, self.key_buffer.shape[2] // 2)    # the copy keeps `length` positions
            self.key_buffer, self.value_buffer = (_with_room(b, self.length, extra)
                                                  for b in (self.key_buffer, self.value_buffer))
        self.key_buffer[:, :, self.length:end] = key_states
        self.value_buffer[:, :, self.length:end] = value_states
        self.length = end
        self._expose()
        return self.keys, self.values


class RoomyCache(DynamicCache):
    """A ``DynamicCache`` made of :class:`RoomyLayer` s: ``layers``, or (None) layers added as
    the model updates them, each with ``room`` positions to spare after its first update; every
    layer rounds what it is given to ``round_to`` (None: kept as computed)."""

    def __init__(self, layers: Optional[list] = None, room: int = 0, round_to: Optional[torch.dtype] = None):
        if layers is None:
            Cache.__init__(self, layer_class_to_replicate=functools.partial(RoomyLayer, room=room, round_to=round_to))
        else:
            for layer in layers:
                layer.round_to = round_to
            Cache.__init__(self, layers=layers)


def _with_room(tensor: torch.Tensor, length: int, room: int) -> torch.Tensor:
    """The first ``length`` positions of ``tensor`` in a new buffer with ``room`` more."""
    batch, heads, _, dim = tensor.shape
    out = _tracked(tensor.new_empty(batch, heads, length + room, dim))
    out[:, :, :length] = tensor[:, :, :length]
    return out


def empty_cache(template: list, batch: int, length: int, room: int, dtype,
                round_to: Optional[torch.dtype] = None) -> RoomyCache:
    """A zero cache of ``batch`` rows of ``dtype`` shaped like ``template`` [(keys, values)] per
    layer, with ``length`` filled positions (zeros: left padding and slots for the caller to copy
    into) and ``room`` more."""
    keys = template[0][0]
    return zero_cache([k.device for k, _ in template], (batch, keys.shape[1], length, keys.shape[3]), room,
                      dtype, round_to)


def zero_cache(devices: list, shape: tuple, room: int, dtype, round_to: Optional[torch.dtype] = None) -> RoomyCache:
    """A cache of zeros, a layer on each of ``devices`` (layers may sit on several GPUs),
    ``shape`` = (batch, heads, filled positions, dim), with ``room`` positions more. Zeros, not
    empty memory: padding is masked out, but a masked NaN would still make the attention NaN."""
    batch, heads, length, dim = shape
    full = (batch, heads, length + room, dim)
    return RoomyCache([RoomyLayer(_tracked(torch.zeros(full, dtype=dtype, device=device)),
                                  _tracked(torch.zeros(full, dtype=dtype, device=device)), length)
                       for device in devices], round_to=round_to)


def _round_to(cache: RoomyCache) -> Optional[torch.dtype]:
    """What ``cache``'s layers round to (a cache derived from it rounds the same way)."""
    return cache.layers[0].round_to if cache.layers else None


def select_rows(cache: RoomyCache, rows: torch.Tensor, room: int = 0) -> RoomyCache:
    """A cache of the batch rows ``rows`` (in that order), with at least ``room`` free slots."""
    layers = []
    for layer in cache.layers:
        rows = rows.to(layer.key_buffer.device)     # layers may sit on several GPUs (device_map)
        if layer.key_buffer.shape[2] - layer.length >= room:
            keys = _tracked(layer.key_buffer.index_select(0, rows))
            values = _tracked(layer.value_buffer.index_select(0, rows))
        else:
            keys = _with_room(layer.keys.index_select(0, rows), layer.length, room)
            values = _with_room(layer.values.index_select(0, rows), layer.length, room)
        layers.append(RoomyLayer(keys, values, layer.length))
    return RoomyCache(layers, round_to=_round_to(cache))


def keep_rows(cache: RoomyCache, rows: list) -> RoomyCache:
    """The cache of the batch rows ``rows`` (ascending), moved to the front of the same buffers:
    no second copy of the batch while its finished rows are dropped (their memory is freed with
    the batch)."""
    layers = []
    for layer in cache.layers:
        for slot, row in enumerate(rows):
            if slot != row:             # rows ascend, so a row is read before it is overwritten
                layer.key_buffer[slot].copy_(layer.key_buffer[row])
                layer.value_buffer[slot].copy_(layer.value_buffer[row])
        layers.append(RoomyLayer(layer.key_buffer[:len(rows)], layer.value_buffer[:len(rows)], layer.length))
    return RoomyCache(layers, round_to=_round_to(cache))


def kv_round_to(model) -> Optional[torch.dtype]:
    """The dtype ``model``'s keys and values are rounded to as its caches keep them (an int8
    model's: bfloat16, socialgym_agents.llm.int8), or None."""
    return getattr(model, "kv_round_to", None)
