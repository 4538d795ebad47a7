"""load_slices: the parts of tensors that get_slice(...)[...] asks for.

PLACEHOLDER: loads each wanted tensor whole (one engine load for all of them) and cuts the
ranges out with torch. The slice engine (the engine's load_slices: only the bytes each range
needs, every request planned as one pass through the ring) replaces this body; the signature
and what it returns stay.
"""
from __future__ import annotations

from ._tensors import to_torch

_CONVERTIBLE = ("float64", "float32", "float16", "bfloat16")


def load_slices(engine, entries, requests, device: str, verify: bool, dtype=None) -> tuple:
    """requests: list of (entry, ranges) where entry is a ringload._deserializer._Entry (has
    .index, .dtype, .shape) and ranges one (start, stop) per dimension, normalized
    (0 <= start <= stop <= size). Returns (tensors in request order, bytes read from the
    source by this call)."""
    del entries  # the whole index; the engine version plans with it
    wanted = list({entry.index: entry for entry, _ in requests}.values())
    if not wanted:
        return [], 0
    loaded = engine.load([entry.index for entry in wanted], device=device, dtype=dtype, verify=verify,
                         destinations=None, slot_size=0, slot_count=0, threads=0, progress=None)
    whole = {}
    for k, entry in enumerate(wanted):
        loaded_dtype = dtype if dtype is not None and entry.dtype in _CONVERTIBLE else entry.dtype
        whole[entry.index] = to_torch(loaded, k, loaded_dtype, entry.shape)
    tensors = []
    for entry, ranges in requests:
        tensor = whole[entry.index]
        for dim, (start, stop) in enumerate(ranges):
            tensor = tensor.narrow(dim, start, stop - start)
        tensors.append(tensor.clone())  # its own memory, not a view keeping the whole tensor alive
    return tensors, loaded.bytes
