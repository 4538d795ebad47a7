"""A checkpoint read straight into a model's parameters: the plan (_parameter_plan.py) says
which part of which tensor goes where, and the engine reads each part into its place in one
pass per file (Deserializer.load_slices with destinations). Tensors the model's loader computes
with are read in the same pass into memory of their own and handed to `load_weights` after.

    report = load_into_parameters(["/models/llama/model.safetensors"], model.load_weights,
                                  {"verify_hash": True})
    report.loaded            # what load_weights said it loaded, both ways
    report.straight_bytes    # bytes read into parameters; report.handed_bytes: handed over

With `model` and map_files, a parameter that takes a whole tensor (or whole rows of it) as
stored, from a local unencrypted safetensors file, is instead backed by the file's own pages,
mapped copy-on-write: no byte is copied or written, and the kernel's page cache holds them (its
storage is replaced: that parameter's data_ptr changes). The rest is copied straight in.
Host parameters only (the plan hands over anything copied to a device).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Set, Tuple

from ._deserializer import _dtype_name
from ._parameter_plan import Piece, learn_plan
from ._slices import slice_bytes
from ._tensors import to_torch
from .errors import RingloadError


@dataclass
class ParameterLoadReport:
    loaded: Set[str] = field(default_factory=set)
    straight_bytes: int = 0  # read straight into parameters
    straight_tensors: int = 0
    mapped_bytes: int = 0  # parameters backed by the file's pages (map_files)
    mapped_tensors: int = 0
    handed_bytes: int = 0  # read into memory of their own and handed to load_weights
    handed: Dict[str, str] = field(default_factory=dict)  # name -> why
    bytes_read: int = 0  # from the sources
    plan_seconds: float = 0.0
    seconds: float = 0.0

    def summary(self) -> str:
        reasons = sorted(set(self.handed.values()))
        why = f" ({'; '.join(reasons[:3])}{'; ...' if len(reasons) > 3 else ''})" if reasons else ""
        mapped = (f"{self.mapped_bytes / 1e6:.1f} MB of {self.mapped_tensors} tensors mapped from the file's "
                  f"pages, " if self.mapped_tensors else "")
        return (f"{mapped}{self.straight_bytes / 1e6:.1f} MB of {self.straight_tensors} tensors read straight into "
                f"the parameters, {self.handed_bytes / 1e6:.1f} MB of {len(self.handed)} handed to load_weights{why}; "
                f"{self.bytes_read / 1e6:.1f} MB read, plan {self.plan_seconds:.2f} s, all {self.seconds:.2f} s")


# TensorDeserializer keywords that are not the open's (placement: map_files decides).
_OPEN_ONLY = ("verify_hash", "process_group", "placement")


def _mappable(source: str, kwargs: dict) -> bool:
    """A file the engine can leave in its pages: local, safetensors, unencrypted, unverified."""
    from ._opening import is_url
    return (not is_url(source) and source.endswith(".safetensors") and "encryption" not in kwargs
            and not kwargs.get("verify_hash"))


def _maps(source: str, kwargs: dict, map_files) -> bool:
    if not map_files or not _mappable(source, kwargs):
        return False
    from . import _ringload
    # "cached": as the engine's read_mode "auto" decides (io/src/file_source.cpp): a file mostly
    # in the page cache; less, it reads with O_DIRECT, which faulting a mapping in cannot match.
    return map_files != "cached" or _ringload.mostly_in_page_cache(source)


def _open_all(sources: List[str], kwargs: dict, map_files):
    """Each source opened (index only), and where each tensor name is."""
    from ._deserializer import TensorDeserializer
    opened, where = [], {}
    open_kwargs = {k: v for k, v in kwargs.items() if k not in _OPEN_ONLY}
    for source in sources:
        maps = _maps(source, kwargs, map_files)
        deserializer = TensorDeserializer(source, device="cpu", lazy_load=True,
                                          **dict(open_kwargs, **({"placement": "mapped"} if maps else {})))
        deserializer._maps = maps
        opened.append(deserializer)
        for entry in deserializer._entries:
            if entry.name in where:
                raise ValueError(f"ringload: the tensor {entry.name} is in two weight files: "
                                 f"{sources[where[entry.name][0]]} and {source}")
            where[entry.name] = (len(opened) - 1, entry)
    return opened, where


def _whole_parameters(model) -> Dict[int, object]:
    """The model's parameters and buffers by address (tied ones once)."""
    found = {}
    if model is not None:
        for _, tensor in list(model.named_parameters()) + list(model.named_buffers()):
            if tensor.device.type == "cpu" and tensor.numel() > 0:
                found.setdefault(tensor.data_ptr(), tensor)
    return found


def _mapped_target(piece, entry, parameters):
    """The parameter `piece` fills whole from whole rows of `entry` as stored, or None."""
    destination = piece.destination
    target = parameters.get(destination.data_ptr())
    if (target is None or target.numel() != destination.numel() or _dtype_name(target.dtype) != entry.dtype
            or not target.is_contiguous()):
        return None
    if any((start, stop) != (0, size) for (start, stop), size in zip(piece.ranges[1:], entry.shape[1:])):
        return None  # not whole rows: not one stretch of the file
    return target


def _map_parameters(deserializer, entries, planned: Dict[str, List[Piece]], parameters,
                    report: ParameterLoadReport) -> set:
    """Backs the parameters that take whole rows as stored by the file's pages (one engine load
    with the mapped placement); returns the names done."""
    chosen = []
    for entry in entries:
        pieces = planned.get(entry.name, ())
        targets = [_mapped_target(piece, entry, parameters) for piece in pieces]
        if pieces and all(target is not None for target in targets):
            chosen.append((entry, list(zip(pieces, targets))))
    if not chosen:
        return set()
    try:
        loaded = deserializer._engine.load([entry.index for entry, _ in chosen], device="cpu", contiguous=False)
    except RingloadError:
        return set()  # the engine cannot map this file (it says why for a load asking for it): copied in instead
    report.bytes_read += loaded.bytes_read
    for k, (entry, pairs) in enumerate(chosen):
        tensor = to_torch(loaded, k, entry.dtype, tuple(entry.shape))
        for piece, target in pairs:
            start, stop = piece.ranges[0] if piece.ranges else (0, 1)
            rows = tensor[start:stop] if piece.ranges else tensor
            target.data = rows.reshape(target.shape)
            report.mapped_bytes += slice_bytes(entry, piece.ranges)
        report.mapped_tensors += 1
    return {entry.name for entry, _ in chosen}


def _read_source(deserializer, entries, planned: Dict[str, List[Piece]], handed_names, verify: bool,
                 report: ParameterLoadReport):
    """One source's planned pieces into their places, and its handed tensors into memory of their
    own (returned as (name, tensor) in file order). One engine pass per loaded dtype."""
    groups: Dict[object, List[Tuple[object, list, int]]] = {}
    handed = []
    for entry in entries:
        if entry.name in handed_names:
            whole = [(0, n) for n in entry.shape]
            groups.setdefault(None, []).append((entry, whole, 0))
            handed.append(entry)
            report.handed_bytes += slice_bytes(entry, whole)
            continue
        for piece in planned.get(entry.name, ()):
            wanted = _dtype_name(piece.destination.dtype)
            groups.setdefault(None if wanted == entry.dtype else wanted, []).append(
                (entry, piece.ranges, piece.destination.data_ptr()))
            report.straight_bytes += slice_bytes(entry, piece.ranges)
        report.straight_tensors += entry.name in planned
    tensors = {}
    for dtype, requests in groups.items():
        loaded = deserializer._engine.load_slices(
            [(entry.index, ranges) for entry, ranges, _ in requests], device="cpu", dtype=dtype, verify=verify,
            slot_size=deserializer._slot_size, slot_count=deserializer._slot_count, threads=deserializer._threads,
            destinations=[address for _, _, address in requests])
        report.bytes_read += loaded.bytes_read
        for k, (entry, ranges, address) in enumerate(requests):
            if address == 0:
                tensors[entry.name] = to_torch(loaded, k, entry.dtype, tuple(entry.shape))
    return [(entry.name, tensors[entry.name]) for entry in handed]


def cpus_available() -> float:
    """The CPUs this process may use: its affinity, or fewer where a cgroup quota says so."""
    import os
    count = float(len(os.sched_getaffinity(0)))
    try:
        with open("/sys/fs/cgroup/cpu.max") as file:
            quota, period = file.read().split()
        if quota != "max":
            count = min(count, int(quota) / int(period))
    except (OSError, ValueError):
        pass
    return count


def maps_files(placement: str):
    """load_into_parameters' map_files for a placement: "mapped": parameters backed by the
    file's pages where they can be (True); "arena": copied into (False); "auto": mapped where
    the process may use one CPU or less (a server's bound worker, a one-CPU quota: copies, and
    the first writes to fresh memory they make, are what the load waits for) and the file is
    in the page cache ("cached": cold, O_DIRECT reads copied in were faster; docs/benchmarks.md)."""
    if placement == "mapped":
        return True
    return "cached" if placement == "auto" and cpus_available() <= 1 else False


def load_into_parameters(sources: List[str], load_weights: Callable, kwargs: dict, model=None,
                         map_files=False) -> ParameterLoadReport:
    """Loads `sources` (paths or URLs, any format) into the model whose `load_weights` is given;
    kwargs are TensorDeserializer's (verify_hash, encryption, the network and ring options).
    map_files (with `model`): parameters that take whole rows as stored from a local safetensors
    file are backed by its pages instead of copied into (True; "cached": where the file is in
    the page cache)."""
    started = time.perf_counter()
    report = ParameterLoadReport()
    opened, where = _open_all(sources, kwargs, map_files if model is not None else False)
    parameters = _whole_parameters(model) if map_files else {}
    try:
        checkpoint = [(name, tuple(entry.shape), entry.dtype) for name, (_, entry) in where.items()]
        plan = learn_plan(load_weights, checkpoint)
        report.plan_seconds = time.perf_counter() - started
        report.loaded |= plan.loaded
        report.handed = dict(plan.handed)
        verify = bool(kwargs.get("verify_hash", False))
        planned = plan.planned()
        for deserializer in opened:
            entries = deserializer._entries
            if deserializer._maps:
                mapped = _map_parameters(deserializer, entries, planned, parameters, report)
                entries = [entry for entry in entries if entry.name not in mapped]
            handed = _read_source(deserializer, entries, planned, plan.handed, verify, report)
            if handed:
                report.loaded |= set(load_weights(iter(handed)) or ())
    finally:
        for deserializer in opened:
            deserializer.close()
    report.seconds = time.perf_counter() - started
    return report
