"""Read once per process group: each rank reads a share of the bytes, torch.distributed moves them.

    group = torch.distributed.group.WORLD           # or any group every rank of it calls with
    tensors = ringload.load_file("model.safetensors", process_group=group)

Every rank of the group lays the wanted tensors out the same way, one after another (64-byte
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

import bisect
import math
from dataclasses import dataclass, field
from typing import List

from ._tensors import ITEMSIZE, loaded_dtype, to_torch, torch_dtype

ALIGNMENT = 64
ROUND_BYTES = 64 << 20


def _align(offset: int) -> int:
    return (offset + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass
class Piece:
    """Rows [row_start, row_stop) of a tensor (all of it when whole), at `offset` in the buffer."""
    entry: object
    offset: int
    length: int
    whole: bool
    row_start: int = 0
    row_stop: int = 0


@dataclass
class Layout:
    """Where each wanted tensor lies in the flat buffer and which bytes each rank reads."""
    offsets: List[int]
    total_bytes: int
    # rounds[i][r]: the pieces rank r reads in round i (possibly none), and the buffer range
    # [begin, end) they cover (the range broadcast from r in round i).
    rounds: List[List[tuple]] = field(default_factory=list)


def _loaded_bytes(entry, dtype) -> int:
    return math.prod(entry.shape) * ITEMSIZE[loaded_dtype(entry.dtype, dtype)]


def plan(entries, dtype, world_size: int, splittable, round_bytes: int = ROUND_BYTES) -> Layout:
    """The same on every rank: it depends on the index and the arguments only."""
    offsets, cursor = [], 0
    for entry in entries:
        cursor = _align(cursor)
        offsets.append(cursor)
        cursor += _loaded_bytes(entry, dtype)
    total = cursor
    # Every position a cut may fall on, in order: tensor starts and ends, and row boundaries
    # inside tensors that can be split.
    cut_points = {0, total}
    for entry, offset in zip(entries, offsets):
        length = _loaded_bytes(entry, dtype)
        cut_points.add(offset)
        cut_points.add(offset + length)
        if splittable(entry) and length > 0:
            row = length // entry.shape[0]
            cut_points.update(offset + row * j for j in range(1, entry.shape[0]))
    cut_points = sorted(cut_points)

    def snap(target: int) -> int:
        # The cut point nearest `target` (the first of two equally near).
        at = bisect.bisect_left(cut_points, target)
        if at == len(cut_points):
            return cut_points[-1]
        if at > 0 and target - cut_points[at - 1] <= cut_points[at] - target:
            return cut_points[at - 1]
        return cut_points[at]

    shares = [snap(total * r // world_size) for r in range(world_size)] + [total]
    shares = [max(shares[: r + 1]) for r in range(world_size + 1)]  # never decreasing
    per_rank = []
    for r in range(world_size):
        begin, end = shares[r], shares[r + 1]
        chunks, at = [], begin
        while at < end:
            stop = snap(min(end, at + round_bytes))  # end is a cut point: never past it
            if stop <= at:  # one tensor that cannot be split, larger than a round
                stop = cut_points[bisect.bisect_right(cut_points, at)]
            chunks.append((at, stop))
            at = stop
        per_rank.append(chunks)
    layout = Layout(offsets, total)
    for i in range(max((len(c) for c in per_rank), default=0)):
        layout.rounds.append([])
        for r in range(world_size):
            if i < len(per_rank[r]):
                begin, end = per_rank[r][i]
                layout.rounds[i].append((begin, end, _pieces(entries, offsets, dtype, begin, end)))
            else:
                layout.rounds[i].append((0, 0, []))
    return layout


def _pieces(entries, offsets, dtype, begin: int, end: int) -> List[Piece]:
    """The tensors with bytes in [begin, end): whole, or the rows of one that a cut splits.

    begin and end are cut points of plan(): tensor boundaries, or row boundaries inside a
    tensor that may be split; so a tensor is either inside the range or cut at a row."""
    pieces = []
    for entry, offset in zip(entries, offsets):
        length = _loaded_bytes(entry, dtype)
        start, stop = max(begin, offset), min(end, offset + length)
        if length == 0 or start >= stop:
            continue  # no bytes (built empty), or not in this range
        if start == offset and stop == offset + length:
            pieces.append(Piece(entry, offset, length, True))
            continue
        row = length // entry.shape[0]
        pieces.append(Piece(entry, start, stop - start, False, (start - offset) // row, (stop - offset) // row))
    return pieces


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

    def splittable(self, verify: bool):
        engine = self.deserializer._engine
        whole_only = verify or engine.encrypted

        def can_split(entry) -> bool:
            return not whole_only and len(entry.shape) >= 1 and entry.shape[0] > 1 and not entry.is_meta
        return can_split

    def load(self, entries, verify: bool) -> tuple:
        """(tensors in `entries` order, bytes this rank read from the source)."""
        import torch
        d = self.deserializer
        can_split = self.splittable(verify)
        layout = plan(entries, d._dtype, self.world_size, can_split, self.round_bytes)
        device = torch.device(d._device)
        flat = torch.empty(layout.total_bytes, dtype=torch.uint8, device=device)
        failure, bytes_read, pending = None, 0, []
        for round_ in layout.rounds:
            begin, end, pieces = round_[self.rank]
            if failure is None and pieces:
                try:
                    bytes_read += self._read(pieces, flat, verify, can_split)
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
        for entry, offset in zip(entries, layout.offsets):
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

    def _read(self, pieces: List[Piece], flat, verify: bool, splittable) -> int:
        """Reads `pieces` into `flat` in one engine load: as tensors where none is split, else
        as slices (a whole tensor as the slice of all of it), so that the slice reader's merged
        ranges never read a tensor twice."""
        from ._slices import load_slices
        d = self.deserializer
        pieces = [p for p in pieces if p.length > 0]
        if all(p.whole for p in pieces) and not any(splittable(p.entry) for p in pieces):
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
