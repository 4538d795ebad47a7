"""load_file / save_file in the style of safetensors.torch, for every format ringload reads.

    tensors = ringload.load_file("model.safetensors", device="cuda:0")   # or .pt, .tensors
    ringload.save_file(tensors, "model.safetensors", metadata={"format": "pt"})

The format is found from the file's first bytes, never from its name. Tensors of one load
share one host arena (or device allocation); torch zip tensors that shared a storage when
saved share its memory here too.
"""
from __future__ import annotations

from typing import Optional

from ._deserializer import TensorDeserializer


def load_file(filename, device="cpu", dtype=None, **options) -> dict:
    """A flat dict of name to torch tensor (nested names joined with '.').

    Args:
        filename: a path or URL (http(s)://, s3://, redis://) of a tensorizer, safetensors or
            torch.save zip file.
        device: "cpu", "cuda", "cuda:N" (or an int N, as safetensors takes it).
        dtype: floating tensors become this dtype on the way.
        options: the TensorDeserializer's keyword arguments (encryption, verify_hash, ...).
    """
    if isinstance(device, int):
        device = f"cuda:{device}"
    with TensorDeserializer(filename, device=device, dtype=dtype, **options) as deserializer:
        return deserializer.flat_tensors()


def save_file(tensors: dict, filename, metadata: Optional[dict] = None, *, format: str = "safetensors",
              alignment: int = 8) -> None:
    """Writes a dict of name to tensor as safetensors (default), torch or tensorizer.

    The file appears under its name only once complete. metadata (str to str) is safetensors'
    __metadata__; alignment 8 or 64 is where safetensors' data starts.
    """
    from ._serializer import write_file
    write_file(tensors, filename, format=format, metadata=metadata, alignment=alignment)
