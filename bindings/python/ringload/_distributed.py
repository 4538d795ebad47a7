"""Read once per process group: each rank reads a share of the bytes, torch.distributed moves them.

    group = torch.distributed.group.WORLD           # or any group every rank of it calls with
    tensors = ringload.load_file("model.safetensors", process_group=group)

The plan is the engine's (ringload/share_plan.hpp, the same on every rank). Every rank of the
group lays the wanted tensors out the same way, one after another (64-byte
aligned) in one flat byte buffer of the model's loaded size. The buffer is cut into one share
per rank, balanced by bytes: a cut may fall inside a tensor, between two of its rows (along its
first dimension), so a huge tensor is read by several ranks. Each share is cut again into
rounds of at most `round_bytes`. In round i every rank reads its i-th piece of bytes from the
source (through the engine, as a single-process load reads: decrypted, hash-checked, converted)
into its place in the buffer, then the pieces of that round are broadcast from their readers
(asynchronously: the next round's reads overlap them). Every rank ends with every tensor, each
a view of the buffer.

A tensor is split between rows only where a row range can be read on its own: not with
verify_hash (a hash covers the whole tensor), not in encrypted files (a tensor is one sealed
message), not a scalar or a meta tensor. Those are read whole, by the rank whose share holds their first byte.

Failure: a rank whose read fails keeps taking part in the broadcasts (with bytes nobody will
use), and at the end the ranks tell each other how they fared; if any failed, every rank
raises the same error, naming the rank and what went wrong. A rank that dies makes the others'
collectives fail after the group's timeout; that is raised too. No rank ever returns a model
another rank could not read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

from ._tensors import ITEMSIZE, loaded_dtype, to_torch, torch_dtype

ROUND_BYTES = 64 << 20


@dataclass
class Piece:
    """Rows [row_start, row_stop) of a tensor (all of it when whole), at `offset` in the buffer."""
    entry: object
    offset: int
    length: int
    whole: bool
    row_start: int = 0
    row_stop: int = 0


def _loaded_bytes(entry, dtype) -> int:
    return math.prod(entry.shape) * ITEMSIZE[loaded_dtype(entry.dtype, dtype)]


def _bytes_of(tensor):
    """A tensor's bytes in C order, as uint8."""
    import torch
    return tensor.contiguous().reshape(-1).view(torch.uint8)


class DistributedLoad:
    """One group-wide load of `entries` for a TensorDeserializer (see the module's doc)."""

    def __init__(self, deserializer, group, round_bytes: int = ROUND_BYTES):
        import torch.distributed as dist
        self.dist = dist
        self.deserializer = deserializer
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.round_bytes = round_bytes

    def load(self, entries, verify: bool) -> tuple:
        """(tensors in `entries` order, bytes this rank read from the source)."""
        import torch
        d = self.deserializer
        # The engine's plan (ringload/share_plan.hpp): the same on every rank.
        whole_only = verify or d._engine.encrypted
        offsets, total_bytes, rounds = d._engine.plan_shares([e.index for e in entries], d._dtype, self.world_size,
                                                             not whole_only, self.round_bytes)
        device = torch.device(d._device)
        flat = torch.empty(total_bytes, dtype=torch.uint8, device=device)
        failure, bytes_read, pending = None, 0, []
        for round_ in rounds:
            begin, end, planned = round_[self.rank]
            pieces = [Piece(entries[k], offset, length, whole, row_begin, row_end)
                      for k, whole, row_begin, row_end, offset, length in planned]
            if failure is None and pieces:
                try:
                    bytes_read += self._read(pieces, flat, verify)
                except Exception as error:  # told to every rank below, raised on every rank
                    failure = f"{type(error).__name__}: {error}"
            for r, (b, e, _) in enumerate(round_):
                if e > b:
                    pending.append(self.dist.broadcast(flat[b:e], src=self._global_rank(r), group=self.group,
                                                       async_op=True))
        try:
            for work in pending:
                work.wait()
            outcomes = [None] * self.world_size
            self.dist.all_gather_object(outcomes, failure, group=self.group)
        except RuntimeError as error:
            raise RuntimeError(f"{d._source_name}: the load over the process group failed on rank {self.rank} of "
                               f"{self.world_size} (a rank died or stopped answering?): {error}") from error
        failed = [(r, text) for r, text in enumerate(outcomes) if text is not None]
        if failed:
            r, text = failed[0]
            raise RuntimeError(f"{d._source_name}: rank {r} of {self.world_size} could not read its share: {text}")
        tensors = []
        for entry, offset in zip(entries, offsets):
            length = _loaded_bytes(entry, d._dtype)
            dtype = torch_dtype(loaded_dtype(entry.dtype, d._dtype))
            if length == 0:
                tensors.append(torch.empty(entry.shape, dtype=dtype, device=device))
            else:
                tensors.append(flat[offset:offset + length].view(dtype).reshape(entry.shape))
        return tensors, bytes_read

    def _global_rank(self, group_rank: int) -> int:
        if self.group is None or self.group == self.dist.group.WORLD:
            return group_rank
        return self.dist.get_global_rank(self.group, group_rank)

    def _read(self, pieces: List[Piece], flat, verify: bool) -> int:
        """Reads `pieces` into `flat` in one engine load: as tensors where none is split, else
        as slices (a whole tensor as the slice of all of it), so that the slice reader's merged
        ranges never read a tensor twice."""
        from ._slices import load_slices
        d = self.deserializer
        pieces = [p for p in pieces if p.length > 0]
        if all(p.whole for p in pieces):
            loaded = d._engine_load([p.entry for p in pieces], d._device, verify)
            tensors = [to_torch(loaded, k, d._loaded_dtype(p.entry), p.entry.shape) for k, p in enumerate(pieces)]
            bytes_read = loaded.bytes_read
        else:
            requests = [(p.entry, [(0, size) for size in p.entry.shape] if p.whole else
                         [(p.row_start, p.row_stop)] + [(0, size) for size in p.entry.shape[1:]]) for p in pieces]
            tensors, bytes_read = load_slices(d._engine, None, requests, d._device, verify, d._dtype)
        for piece, tensor in zip(pieces, tensors):
            # As the tensor, in C order (torch zip tensors may be strided views of a storage).
            flat[piece.offset:piece.offset + piece.length].copy_(_bytes_of(tensor))
        return bytes_read
