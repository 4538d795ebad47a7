"""Read once over a tensor-parallel group, straight into each rank's parameters
(params/load.py's `group`).

Every rank learns its own plan (its rows and columns of each tensor), then the ranks tell each
other what they want (all_gather_object) and the engine's planner (plan_group_reads,
ringload/share_plan.hpp) splits the checkpoint the same way on every rank; this module only
moves the bytes:

  - a tensor the ranks want as disjoint whole-row ranges (column-parallel weights, vocabulary-
    parallel embeddings) is read by each rank itself, its own rows straight into its own
    parameters: together they read it once, and nothing moves over the group;
  - any other wanted tensor (replicated ones such as norms; column cuts, whose rows the reader
    would read through; one a loader computes with; every tensor of an encrypted or verified
    file, whose hashes and seals cover whole tensors) is read whole by one rank (the one with
    the fewest such bytes so far) and broadcast to the ranks that want it, each of which hands
    it to its load_weights as the default loader would.

Failure: the ranks agree (all_reduce) that every read succeeded before anything moves; if one
failed, every rank raises the same error naming that rank, and no rank loads a tensor another
could not read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Set, Tuple

from .. import _ringload
from ..ground.distributed import global_rank
from .plan import Piece
from ..ground.tensors import torch_dtype


@dataclass
class GroupShare:
    own: Dict[str, List[Piece]] = field(default_factory=dict)  # pieces this rank reads straight in
    owned: Set[str] = field(default_factory=set)  # whole tensors this rank reads for the group
    # (name, reading rank, ranks that want it), in one order on every rank.
    shared: List[Tuple[str, int, List[int]]] = field(default_factory=list)


def share_over_group(group, checkpoint, planned: Dict[str, List[Piece]], handed: Set[str],
                     whole_only: bool) -> GroupShare:
    """The group's split of `checkpoint` ((name, shape, bytes) in one order on every rank);
    whole_only: every tensor read whole by one rank (encrypted or verified files). The ranks
    tell each other what they want; the engine's planner (ringload/share_plan.hpp,
    plan_group_reads) splits it, the same way on every rank."""
    import torch.distributed as dist
    rank, world_size = dist.get_rank(group), dist.get_world_size(group)
    mine = ({name: [[tuple(r) for r in piece.ranges] for piece in pieces] for name, pieces in planned.items()},
            sorted(handed))
    everyone = [None] * world_size
    dist.all_gather_object(everyone, mine, group=group)
    split, shared = _ringload.plan_group_reads([(n, list(s), b) for n, s, b in checkpoint], everyone, whole_only)
    return GroupShare(own={name: planned[name] for name in split if name in planned},
                      owned={name for name, reader, _ in shared if reader == rank}, shared=shared)


def agree_reads_succeeded(group, failure) -> None:
    """Raises on every rank if any rank's reads failed (failure: its error text, or None)."""
    import torch
    import torch.distributed as dist
    world_size = dist.get_world_size(group)
    failed = torch.tensor([0 if failure is None else 1], dtype=torch.int32)
    dist.all_reduce(failed, op=dist.ReduceOp.MAX, group=group)
    if int(failed.item()) == 0:
        return
    outcomes = [None] * world_size
    dist.all_gather_object(outcomes, failure, group=group)
    reader, text = next((r, text) for r, text in enumerate(outcomes) if text is not None)
    raise RuntimeError(f"ringload: rank {reader} of {world_size} could not read its share of the checkpoint: {text}")


# The most bytes of shared tensors a rank holds at once: a batch is broadcast, handed to
# load_weights and dropped before the next (verified or encrypted files share every tensor).
BATCH_BYTES = 256 << 20


def _batches(shared, entries):
    batch, size = [], 0
    for item in shared:
        nbytes = entries[item[0]].data_length
        if batch and size + nbytes > BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += nbytes
    if batch:
        yield batch


def exchange(group, share: GroupShare, read: Dict[str, object], entries: Dict[str, object]):
    """Broadcasts each shared tensor from its reader, in batches of at most BATCH_BYTES (and
    one tensor more than that alone); yields, per batch, (name, tensor) for those this rank
    wants, in the shared order. Every rank takes part in every broadcast (gloo's broadcast is
    the group's), and drops the tensors it does not want with the batch."""
    import torch
    import torch.distributed as dist
    rank = dist.get_rank(group)
    for batch in _batches(share.shared, entries):
        received, works = [], []
        for name, reader, ranks in batch:
            if len(ranks) == 1:
                if reader == rank:
                    received.append((name, read[name]))
                continue
            entry = entries[name]
            if reader == rank:
                tensor = read[name].contiguous()
            else:
                tensor = torch.empty(entry.shape, dtype=torch_dtype(entry.dtype))
            if tensor.numel() > 0:  # as bytes: gloo lacks some dtypes
                works.append(dist.broadcast(tensor.reshape(-1).view(torch.uint8),
                                            src=global_rank(group, reader), group=group, async_op=True))
            if rank in ranks:
                received.append((name, tensor))
        for work in works:
            work.wait()
        yield received
