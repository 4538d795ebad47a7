"""A checkpoint read straight into a model's parameters: the plan (_parameter_plan.py) says
which part of which tensor goes where, and the engine reads each part into its place in one
pass per file (Deserializer.load_slices with destinations). Tensors the model's loader computes
with are read in the same pass into memory of their own and handed to `load_weights` after.

    report = load_into_parameters(["/models/llama/model.safetensors"], model.load_weights,
                                  {"verify_hash": True})
    report.loaded            # what load_weights said it loaded, both ways
    report.straight_bytes    # bytes read into parameters; report.handed_bytes: handed over

Host parameters only (the plan hands over anything copied to a device).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Set, Tuple

from ._parameter_plan import Plan, learn_plan
from ._tensors import ITEMSIZE, to_torch


@dataclass
class ParameterLoadReport:
    loaded: Set[str] = field(default_factory=set)
    straight_bytes: int = 0  # read straight into parameters
    straight_tensors: int = 0
    handed_bytes: int = 0  # read into memory of their own and handed to load_weights
    handed: Dict[str, str] = field(default_factory=dict)  # name -> why
    bytes_read: int = 0  # from the sources
    plan_seconds: float = 0.0
    seconds: float = 0.0

    def summary(self) -> str:
        reasons = sorted(set(self.handed.values()))
        why = f" ({'; '.join(reasons[:3])}{'; ...' if len(reasons) > 3 else ''})" if reasons else ""
        return (f"{self.straight_bytes / 1e6:.1f} MB of {self.straight_tensors} tensors read straight into the "
                f"parameters, {self.handed_bytes / 1e6:.1f} MB of {len(self.handed)} handed to load_weights{why}; "
                f"{self.bytes_read / 1e6:.1f} MB read, plan {self.plan_seconds:.2f} s, all {self.seconds:.2f} s")


_OPEN_ONLY = ("verify_hash", "process_group")  # TensorDeserializer keywords that are not the open's


def _open_all(sources: List[str], kwargs: dict):
    """Each source opened (index only), and where each tensor name is."""
    from ._deserializer import TensorDeserializer
    opened, where = [], {}
    open_kwargs = {k: v for k, v in kwargs.items() if k not in _OPEN_ONLY}
    for source in sources:
        deserializer = TensorDeserializer(source, device="cpu", lazy_load=True, **open_kwargs)
        opened.append(deserializer)
        for entry in deserializer._entries:
            if entry.name in where:
                raise ValueError(f"ringload: the tensor {entry.name} is in two weight files: "
                                 f"{sources[where[entry.name][0]]} and {source}")
            where[entry.name] = (len(opened) - 1, entry)
    return opened, where


def _slice_bytes(entry, ranges) -> int:
    return math.prod(stop - start for start, stop in ranges) * ITEMSIZE[entry.dtype]


def _read_source(deserializer, entries, plan: Plan, verify: bool, report: ParameterLoadReport):
    """One source's planned pieces into their places, and its handed tensors into memory of their
    own (returned as (name, tensor) in file order). One engine pass per loaded dtype."""
    from ._deserializer import _dtype_name
    groups: Dict[object, List[Tuple[object, list, int]]] = {}
    handed = []
    planned = plan.planned()
    for entry in entries:
        if entry.name in plan.handed:
            groups.setdefault(None, []).append((entry, [(0, n) for n in entry.shape], 0))
            handed.append(entry)
            report.handed_bytes += _slice_bytes(entry, [(0, n) for n in entry.shape])
            continue
        for piece in planned.get(entry.name, ()):
            wanted = _dtype_name(piece.destination.dtype)
            groups.setdefault(None if wanted == entry.dtype else wanted, []).append(
                (entry, piece.ranges, piece.destination.data_ptr()))
            report.straight_bytes += _slice_bytes(entry, piece.ranges)
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


def load_into_parameters(sources: List[str], load_weights: Callable, kwargs: dict) -> ParameterLoadReport:
    """Loads `sources` (paths or URLs, any format) into the model whose `load_weights` is given;
    kwargs are TensorDeserializer's (verify_hash, encryption, the network and ring options)."""
    started = time.perf_counter()
    report = ParameterLoadReport()
    opened, where = _open_all(sources, kwargs)
    try:
        checkpoint = [(name, tuple(entry.shape), entry.dtype) for name, (_, entry) in where.items()]
        plan = learn_plan(load_weights, checkpoint)
        report.plan_seconds = time.perf_counter() - started
        report.loaded |= plan.loaded
        report.handed = dict(plan.handed)
        verify = bool(kwargs.get("verify_hash", False))
        for deserializer in opened:
            handed = _read_source(deserializer, deserializer._entries, plan, verify, report)
            if handed:
                report.loaded |= set(load_weights(iter(handed)) or ())
    finally:
        for deserializer in opened:
            deserializer.close()
    report.seconds = time.perf_counter() - started
    return report
