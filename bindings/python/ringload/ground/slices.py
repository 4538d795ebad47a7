"""Sliced reads: parts of tensors, each read as only the bytes it needs, all in one engine pass.

The engine (Deserializer::load_slices) turns each request into byte runs (a row range is one
run; a column slice one run per row, merged where dense) and reads every run of every request
in one plan through its ring. safe_open's get_slice and TensorDeserializer.read_slices call
load_slices below.

    tensors, bytes_read = load_slices(engine, None, [(entry, [(0, 4), (0, 768)])], "cpu", False)
"""
from __future__ import annotations

import math

from .tensors import loaded_dtype, to_torch, torch_dtype


def load_slices(engine, entries, requests, device: str, verify: bool, dtype=None) -> tuple[list, int]:
    """requests: list of (entry, ranges) where entry is a ringload.dropin.deserializer.Entry (has .index,
    .dtype, .shape) and ranges one (start, stop) per dimension, normalized (0 <= start <= stop <=
    size). Returns (tensors in request order, bytes read from the source by this call)."""
    del entries  # the entries travel with the requests
    dtype = None if dtype is None else str(dtype).replace("torch.", "")
    if not requests:
        return [], 0
    shapes = [tuple(stop - start for start, stop in ranges) for _, ranges in requests]
    if device == "meta":
        import torch
        return [torch.empty(shape, dtype=torch_dtype(loaded_dtype(entry.dtype, dtype)), device="meta")
                for (entry, _), shape in zip(requests, shapes)], 0
    loaded = engine.load_slices([(entry.index, [(int(a), int(b)) for a, b in ranges]) for entry, ranges in requests],
                                device=device, dtype=dtype, verify=verify)
    tensors = [to_torch(loaded, k, loaded_dtype(entry.dtype, dtype), shape)
               for k, ((entry, _), shape) in enumerate(zip(requests, shapes))]
    return tensors, loaded.bytes_read


def normalize_index(key, shape: tuple) -> tuple[list, list]:
    """A tensor's [key] (ints, slices with step 1, one Ellipsis) as one (start, stop) per dimension,
    and the dimensions that an int index drops, as numpy and torch read it."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(1 for part in key if part is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - len(key) + 1) + key[at + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices for a tensor of {len(shape)} dimensions")
    key = key + (slice(None),) * (len(shape) - len(key))
    ranges, dropped = [], []
    for dim, (part, size) in enumerate(zip(key, shape)):
        if isinstance(part, slice):
            start, stop, step = part.indices(size)
            if step != 1:
                raise ValueError(f"dimension {dim}: ringload reads slices with step 1, not {step}")
            ranges.append((start, max(start, stop)))
            continue
        try:
            position = int(part.__index__())
        except AttributeError:
            raise TypeError(f"dimension {dim}: cannot index with {type(part).__name__}") from None
        if not -size <= position < size:
            raise IndexError(f"index {position} is out of bounds for dimension {dim} with size {size}")
        position %= size
        ranges.append((position, position + 1))
        dropped.append(dim)
    return ranges, dropped


def drop_dims(tensor, ranges: list, dropped: list):
    """The slice's tensor without the dimensions an int index took."""
    if not dropped:
        return tensor
    return tensor.reshape(tuple(b - a for d, (a, b) in enumerate(ranges) if d not in dropped))


def whole_box(shape) -> list:
    """The (start, stop) ranges of all of a tensor."""
    return [(0, size) for size in shape]


def is_whole(ranges, shape, from_dim: int = 0) -> bool:
    """The ranges take every index of each dimension from `from_dim` on (1: whole rows, one
    stretch of the tensor's C-order bytes)."""
    return all((start, stop) == (0, size) for (start, stop), size in zip(ranges[from_dim:], shape[from_dim:]))


def slice_bytes(entry, ranges) -> int:
    from .tensors import ITEMSIZE
    return math.prod(b - a for a, b in ranges) * ITEMSIZE[entry.dtype]
