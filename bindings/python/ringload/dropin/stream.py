"""Streamed hand-over: tensors as they land, long before the whole load is done.

    for name, tensor in ringload.stream_tensors("model.safetensors", device="cuda:0"):
        model.load_weights([(name, tensor)])       # vLLM's load_weights(iterator) style

The engine loads on a thread of its own and hands each tensor over as soon as its bytes are
final (read, decrypted, hash-checked with verify_hash=True, converted to dtype, on a GPU once
its copy completed); tensors come in the order they complete, close to file order. Each is a
zero-copy view of the load's memory, which it keeps alive. The GIL is released while waiting.

Leaving the loop early (break, an exception, close(), or the iterator garbage-collected)
cancels the load: reads stop, its ring slots come back and its thread is joined; the file
can be loaded again at once.
"""
from __future__ import annotations

from typing import Iterator, Tuple

from .deserializer import TensorDeserializer


def stream_tensors(path_or_url, device="cpu", dtype=None, **options) -> Iterator[Tuple[str, object]]:
    """Yields (name, tensor) pairs as the tensors land (names as load_file gives them).

    Args:
        path_or_url: a path or URL (http(s)://, s3://, redis://) of a tensorizer, safetensors
            or torch.save zip file.
        device: "cpu", "cuda", "cuda:N" (or an int N).
        dtype: floating tensors become this dtype on the way.
        options: the TensorDeserializer's keyword arguments (filter_func, encryption,
            verify_hash, ring_bytes, slot_size, threads, read_mode, network options).

    The file is opened (and its index read) here, so a missing file or a bad header raises at
    the call; the load starts with the first next().
    """
    if isinstance(device, int):
        device = f"cuda:{device}"
    options.pop("lazy_load", None)
    deserializer = TensorDeserializer(path_or_url, device=device, dtype=dtype, lazy_load=True, **options)
    return _streamed(deserializer)


def _streamed(deserializer) -> Iterator[Tuple[str, object]]:
    with deserializer:
        yield from deserializer.stream()
