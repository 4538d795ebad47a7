"""Parameters backed by the checkpoint file's own pages, mapped copy-on-write, instead of
copied into: no byte is copied or written, the page cache holds them (params/load.py's
map_files; the parameter's storage is replaced, so its data_ptr changes).

A parameter can be mapped when the pieces the plan writes into it tile it whole and in order,
each piece whole rows of a tensor stored in the parameter's dtype, and those rows lie back to
back in the file in the same order. A whole tensor as stored is the simple case; vLLM's fused
gate_up_proj is the other one that matters: safetensors stores tensors sorted by name, so a
layer's gate_proj and up_proj lie one after the other, as the fused parameter wants them (44%
of a Llama's bytes). q/k/v are stored k, o, q, v and are copied in.
"""
from __future__ import annotations

import bisect
import ctypes
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ..ground.tensors import dtype_name
from .plan import Piece
from ..ground.slices import is_whole
from ..ground.tensors import ITEMSIZE
from ..errors import RingloadError


def _storage_address(tensor) -> int:
    storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()  # torch 1.13
    return storage.data_ptr()


class ModelParameters:
    """The model's contiguous host parameters and buffers, found by any address inside them."""

    def __init__(self, model):
        found, storages = {}, {}
        if model is not None:
            for _, tensor in list(model.named_parameters()) + list(model.named_buffers()):
                if tensor.device.type == "cpu" and tensor.numel() > 0 and tensor.is_contiguous():
                    found.setdefault(tensor.data_ptr(), tensor)  # tied ones once
                    storages.setdefault(_storage_address(tensor), set()).add(
                        (tensor.data_ptr(), tensor.numel() * tensor.element_size()))
        # Not one of several tensors on one storage (a buffer viewing part of a parameter): giving
        # one of them new storage would leave the others with the old bytes.
        shared = {tensor_ptr for views in storages.values() if len(views) > 1 for tensor_ptr, _ in views}
        found = {address: tensor for address, tensor in found.items() if address not in shared}
        self._starts = sorted(found)
        self._by_start = found

    def containing(self, view):
        """The parameter whose memory holds all of `view`, or None."""
        address = view.data_ptr()
        k = bisect.bisect_right(self._starts, address) - 1
        if k < 0:
            return None
        parameter = self._by_start[self._starts[k]]
        end = address + view.numel() * view.element_size()
        return parameter if end <= parameter.data_ptr() + parameter.numel() * parameter.element_size() else None


@dataclass
class _Part:
    offset: int  # bytes into the parameter
    stretch: Tuple[int, int]  # [start, stop) bytes in the file
    entry: object
    piece: Piece


@dataclass
class _Span:
    """A parameter and the parts that fill it, in order, from one stretch of the file."""
    parameter: object
    parts: List[_Part]

    @property
    def nbytes(self) -> int:
        return self.parameter.numel() * self.parameter.element_size()


def _file_stretch(entry, piece: Piece) -> Optional[Tuple[int, int]]:
    """Where the piece's bytes lie in the file, if it is whole rows of the entry (one stretch)."""
    if not is_whole(piece.ranges, entry.shape, 1):
        return None
    if not piece.ranges:
        return entry.data_offset, entry.data_offset + entry.data_length
    row = math.prod(entry.shape[1:]) * ITEMSIZE[entry.dtype]
    start, stop = piece.ranges[0]
    return entry.data_offset + start * row, entry.data_offset + stop * row


def _tiles(span: _Span) -> bool:
    """The parts fill the parameter whole, in order, from back-to-back bytes of the file."""
    at, file_at = 0, span.parts[0].stretch[0]
    for part in span.parts:
        if part.offset != at or part.stretch[0] != file_at:
            return False
        at += part.stretch[1] - part.stretch[0]
        file_at = part.stretch[1]
    return at == span.nbytes


def mappable_spans(entries, planned: Dict[str, List[Piece]], parameters: ModelParameters,
                   whole_tensors: bool = False) -> List[_Span]:
    """The parameters of `entries`' pieces that one stretch of this file can back whole;
    whole_tensors: only those whose parts are whole tensors (the engine maps and pages in whole
    tensors: a tensor-parallel rank mapping its rows would page in the other ranks' too)."""
    spans: Dict[int, _Span] = {}
    spoiled: Set[int] = set()  # a parameter with a piece that is not whole rows as stored
    for entry in entries:
        for piece in planned.get(entry.name, ()):
            parameter = parameters.containing(piece.destination)
            if parameter is None:
                continue
            key = parameter.data_ptr()
            stretch = _file_stretch(entry, piece)
            if stretch is None or dtype_name(parameter.dtype) != entry.dtype:
                spoiled.add(key)
                continue
            part = _Part(piece.destination.data_ptr() - key, stretch, entry, piece)
            spans.setdefault(key, _Span(parameter, [])).parts.append(part)
    chosen, used = [], []  # used: the file stretches chosen spans map
    for key, span in spans.items():
        span.parts.sort(key=lambda part: part.offset)
        if key in spoiled or not _tiles(span) or (whole_tensors and not all(
                part.stretch == (part.entry.data_offset, part.entry.data_offset + part.entry.data_length)
                for part in span.parts)):
            continue
        stretch = (span.parts[0].stretch[0], span.parts[-1].stretch[1])
        # Two parameters on the same bytes would share the pages (one write seen by both): the
        # second is copied in.
        if any(stretch[0] < end and start < stretch[1] for start, end in used):
            continue
        used.append(stretch)
        chosen.append(span)
    return chosen


def _memory_at(address: int, nbytes: int, owner, like):
    """A tensor over [address, address + nbytes) of a mapping `owner` keeps alive, typed and
    shaped like `like`. (The engine hands out one tensor per checkpoint tensor; a fused
    parameter spans several.)"""
    import torch
    memory = (ctypes.c_char * nbytes).from_address(address)
    memory.owner = owner  # frombuffer keeps `memory` alive, and with it the mapping
    return torch.frombuffer(memory, dtype=like.dtype).reshape(like.shape)


def map_spans(deserializer, spans: List[_Span]) -> Tuple[List[_Span], int]:
    """Backs each span's parameter by the file's pages (one engine load, mapped placement).
    Returns the spans done and the bytes of the tensors paged in; none where the engine cannot
    map this file (it says why to a load asking for it; the pieces are then copied in)."""
    entries = {}
    for span in spans:
        for part in span.parts:
            entries.setdefault(part.entry.index, part.entry)
    if not entries:
        return [], 0
    order = sorted(entries)
    try:
        loaded = deserializer.reads.engine.load(order, device="cpu", contiguous=False)
    except RingloadError:
        return [], 0
    # Where each tensor's first byte is in the mapping, less its place in the file.
    shift = {index: loaded.array(k, raw=True).data_ptr() - entries[index].data_offset
             for k, index in enumerate(order)}
    done = []
    for span in spans:
        address = shift[span.parts[0].entry.index] + span.parts[0].stretch[0]
        # One mapping of the file keeps its bytes in the file's order; checked, not assumed.
        if all(shift[part.entry.index] + part.stretch[0] == address + part.offset for part in span.parts):
            span.parameter.data = _memory_at(address, span.nbytes, loaded, span.parameter)
            done.append(span)
    # Not loaded.bytes_read: the engine counts its whole mapping, from the first tensor to the
    # last, with the tensors between them that this load copies in instead (q/k/v).
    return done, sum(entry.data_length for entry in entries.values())
