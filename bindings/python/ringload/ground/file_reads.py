"""An opened file as its readers see it: its tensors (Entry, one per tensor of the index) and
FileReads, what every read of it takes (the engine's handle, the device and dtype, the ring and
threads, the wanted tensors). TensorDeserializer holds one as `reads`; the streamed, distributed
and parameter loads read through it, never through TensorDeserializer's own members.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from .tensors import loaded_dtype


class Entry:
    """One tensor of the index."""

    __slots__ = ("index", "name", "path", "dtype", "shape", "is_meta", "module_index", "tensor_type",
                 "byte_length", "data_length", "data_offset")

    def __init__(self, row: dict):
        self.index = row["index"]
        self.path = tuple(row["path"])
        raw_name = row["name"]
        self.name = _name_of(raw_name, self.path)
        self.dtype, self.shape = row["dtype"], tuple(row["shape"])
        self.is_meta, self.byte_length, self.data_length = row["is_meta"], row["byte_length"], row["data_length"]
        self.module_index, self.tensor_type = row["module_index"], row["tensor_type"]
        self.data_offset = row["data_offset"]  # where its bytes start in the source

    @classmethod
    def from_tuple(cls, row: tuple) -> "Entry":
        """From the engine's tensor_rows() (no dict per tensor: a million-tensor index)."""
        entry = cls.__new__(cls)
        (entry.index, raw_name, entry.path, entry.dtype, entry.shape, entry.byte_length, entry.data_length,
         entry.is_meta, entry.module_index, entry.tensor_type, entry.data_offset) = row
        entry.name = _name_of(raw_name, entry.path)
        return entry


def _name_of(raw_name: bytes, path: tuple) -> str:
    """Flat names are str keys; structured ones (and list indexes) are shown as dotted paths."""
    if len(path) == 1 and isinstance(path[0], str):
        return raw_name.decode("utf-8", "surrogateescape")
    return ".".join(str(c) for c in path)


@dataclass
class FileReads:
    """What every read of one opened file takes."""

    engine: Any                  # the _ringload.Deserializer
    uri: str                     # the path or URL it reads (a file object's: its in-memory copy's path)
    device: str                  # "cpu", "cuda:N" or "meta"
    dtype: Optional[str]         # floating tensors become this dtype on the way; None: as stored
    entries: List[Entry]         # the wanted tensors, in file order
    slot_size: int = 0           # the ring (0: the engine's defaults) and its worker threads
    slot_count: int = 0
    threads: int = 0
    progress: Optional[Callable] = None
    signed: bool = False         # every load reads the whole file and checks its signature
    group: Any = None            # a torch.distributed group that reads the file once between its ranks
    maps: bool = False           # parameter loads: tensors may stay in the file's pages (placement)

    def ring(self) -> dict:
        """The engine's ring keywords (slot_size, slot_count, threads)."""
        return {"slot_size": self.slot_size, "slot_count": self.slot_count, "threads": self.threads}

    def loaded_dtype(self, entry: Entry) -> str:
        """`entry`'s dtype once loaded (dtype= converts floating tensors only)."""
        return loaded_dtype(entry.dtype, self.dtype)

    def load(self, entries, device: str, verify: bool, destinations=None):
        """One engine load of `entries` with this file's dtype, ring and progress. Strided torch
        zip views come as views; to_torch makes their contiguous copies (with torch, so on a
        GPU too, where the engine makes none)."""
        return self.engine.load([e.index for e in entries], device=device, dtype=self.dtype, verify=verify,
                                destinations=destinations, progress=self.progress, contiguous=False, **self.ring())
