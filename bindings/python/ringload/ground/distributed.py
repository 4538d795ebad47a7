"""Read once per process group: each rank reads a share of the bytes, torch.distributed moves them.

    group = torch.distributed.group.WORLD           # or any group every rank of it calls with
    tensors = ringload.load_file("model.safetensors", process_group=group)

The plan is the engine's (ringload/share_plan.hpp, the same on every rank). Every rank of the
group lays the wanted tensors out the same way, one after another (64-byte aligned) in one flat
byte buffer of the model's loaded size. The buffer is cut into one share per rank, balanced by
bytes: a cut may fall inside a tensor, between two of its rows (along its first dimension), so
a huge tensor is read by several ranks. Each share is cut again into rounds of at most 64 MiB
(RINGLOAD_GROUP_ROUND_BYTES). In round i every rank reads its i-th piece of bytes from the
source (through the engine, as a single-process load reads: decrypted, hash-checked,
converted) into its place in the buffer, then the pieces of that round are broadcast from
their readers (asynchronously: the next round's reads overlap them). Every rank ends with
every tensor, each a view of the buffer; stream() hands a round's tensors over once it landed.

A tensor is split between rows only where a row range can be read on its own: not with
verify_hash (a hash covers the whole tensor), not in encrypted files (a tensor is one sealed
message), not a scalar or a meta tensor. Those are read whole, by the rank whose share holds
their first byte.

Failure: a rank whose read fails keeps taking part in the broadcasts (with bytes nobody will
use), and with each round the ranks tell each other whether their reads in it succeeded (an
all_reduce); if any failed, every rank raises the same error, naming the rank and what went
wrong, before that round's tensors are handed over. A rank that dies makes the others'
collectives fail after the group's timeout; that is raised too. No rank ever returns a model
another rank could not read. Every rank must take every tensor (leaving a stream early leaves
the others waiting until the timeout).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import List

from .tensors import ITEMSIZE, loaded_dtype, to_torch, torch_dtype

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


def global_rank(group, group_rank: int) -> int:
    """The global rank of `group`'s rank `group_rank` (what broadcast's src takes)."""
    import torch.distributed as dist
    if group is None or group == dist.group.WORLD:
        return group_rank
    return dist.get_global_rank(group, group_rank)


def _loaded_bytes(entry, dtype) -> int:
    return math.prod(entry.shape) * ITEMSIZE[loaded_dtype(entry.dtype, dtype)]


def _bytes_of(tensor):
    """A tensor's bytes in C order, as uint8."""
    import torch
    return tensor.contiguous().reshape(-1).view(torch.uint8)


class DistributedLoad:
    """One group-wide load of `entries` of an opened file (its FileReads, whose group reads it;
    see the module's doc)."""

    def __init__(self, reads, round_bytes: int = 0):
        import torch.distributed as dist
        self.dist = dist
        self.reads = reads
        self.group = reads.group
        self.rank = dist.get_rank(self.group)
        self.world_size = dist.get_world_size(self.group)
        # RINGLOAD_GROUP_ROUND_BYTES: smaller rounds (tests: many rounds from a small file).
        self.round_bytes = round_bytes or int(os.environ.get("RINGLOAD_GROUP_ROUND_BYTES", ROUND_BYTES))

    def load(self, entries, verify: bool) -> tuple:
        """(tensors in `entries` order, bytes this rank read from the source)."""
        tensors = [None] * len(entries)
        for k, tensor in self.stream(entries, verify):
            tensors[k] = tensor
        return tensors, self.bytes_read

    def stream(self, entries, verify: bool):
        """Yields (k, tensor) for entries[k] once every rank has its bytes: a round's tensors
        after its broadcasts and the ranks' word that their reads in it succeeded, while the
        next round is read. bytes_read grows as this rank reads."""
        import torch
        d = self.reads
        # The engine's plan (ringload/share_plan.hpp): the same on every rank.
        whole_only = verify or d.engine.encrypted
        offsets, total_bytes, rounds = d.engine.plan_shares([e.index for e in entries], d.dtype, self.world_size,
                                                             not whole_only, self.round_bytes)
        device = torch.device(d.device)
        flat = torch.empty(total_bytes, dtype=torch.uint8, device=device)
        # The round after which each tensor is whole on every rank (-1: no bytes to wait for).
        last_round = [-1] * len(entries)
        for i, round_ in enumerate(rounds):
            for _, _, planned in round_:
                for piece in planned:
                    last_round[piece[0]] = i
        due = {}
        for k, i in enumerate(last_round):
            due.setdefault(i, []).append(k)

        def tensor_of(k):
            entry = entries[k]
            dtype = torch_dtype(loaded_dtype(entry.dtype, d.dtype))
            length = _loaded_bytes(entry, d.dtype)
            if length == 0:
                return torch.empty(entry.shape, dtype=dtype, device=device)
            return flat[offsets[k]:offsets[k] + length].view(dtype).reshape(entry.shape)

        for k in due.get(-1, []):
            yield k, tensor_of(k)
        self.bytes_read, failure, in_flight = 0, None, None
        for i, round_ in enumerate(rounds):
            begin, end, planned = round_[self.rank]
            pieces = [Piece(entries[k], offset, length, whole, row_begin, row_end)
                      for k, whole, row_begin, row_end, offset, length in planned]
            if failure is None and pieces:
                try:
                    self.bytes_read += self._read(pieces, flat, verify)
                except Exception as error:  # told to every rank, raised on every rank
                    failure = f"{type(error).__name__}: {error}"
            # This round's broadcasts and the ranks' word on it go out; the next round is read
            # while they travel, then this round's tensors are handed over.
            works = [self.dist.broadcast(flat[b:e], src=global_rank(self.group, r), group=self.group, async_op=True)
                     for r, (b, e, _) in enumerate(round_) if e > b]
            failed = torch.tensor([0 if failure is None else 1], dtype=torch.int32, device=device)
            works.append(self.dist.all_reduce(failed, op=self.dist.ReduceOp.MAX, group=self.group, async_op=True))
            if in_flight is not None:
                yield from self._finish(*in_flight, due, tensor_of, failure)
            in_flight = (i, works, failed)
        if in_flight is not None:
            yield from self._finish(*in_flight, due, tensor_of, failure)

    def _finish(self, i, works, failed, due, tensor_of, failure):
        """Waits for round i; raises on every rank if any rank failed; else yields its tensors."""
        d = self.reads
        try:
            for work in works:
                work.wait()
            if int(failed.item()) != 0:
                outcomes = [None] * self.world_size
                self.dist.all_gather_object(outcomes, failure, group=self.group)
        except RuntimeError as error:
            raise RuntimeError(f"{d.engine.source_name}: the load over the process group failed on rank {self.rank} of "
                               f"{self.world_size} (a rank died or stopped answering?): {error}") from error
        if int(failed.item()) != 0:
            r, text = next((r, text) for r, text in enumerate(outcomes) if text is not None)
            raise RuntimeError(f"{d.engine.source_name}: rank {r} of {self.world_size} could not read its share: {text}")
        for k in due.get(i, []):
            yield k, tensor_of(k)

    def _read(self, pieces: List[Piece], flat, verify: bool) -> int:
        """Reads `pieces` into `flat` in one engine load: as tensors where none is split, else
        as slices (a whole tensor as the slice of all of it), so that the slice reader's merged
        ranges never read a tensor twice."""
        from .slices import load_slices, whole_box
        d = self.reads
        pieces = [p for p in pieces if p.length > 0]
        if all(p.whole for p in pieces):
            loaded = d.load([p.entry for p in pieces], d.device, verify)
            tensors = [to_torch(loaded, k, d.loaded_dtype(p.entry), p.entry.shape) for k, p in enumerate(pieces)]
            bytes_read = loaded.bytes_read
        else:
            requests = [(p.entry, whole_box(p.entry.shape) if p.whole else
                         [(p.row_start, p.row_stop)] + whole_box(p.entry.shape[1:])) for p in pieces]
            tensors, bytes_read = load_slices(d.engine, None, requests, d.device, verify, d.dtype)
        for piece, tensor in zip(pieces, tensors):
            # As the tensor, in C order (torch zip tensors may be strided views of a storage).
            flat[piece.offset:piece.offset + piece.length].copy_(_bytes_of(tensor))
        return bytes_read
