"""A checkpoint read straight into a model's parameters: the plan (params/plan.py) says
which part of which tensor goes where, and the engine reads each part into its place in one
pass per file (Deserializer.load_slices with destinations). Tensors the model's loader computes
with are read in the same pass into memory of their own and handed to `load_weights` after.

    report = load_into_parameters(["/models/llama/model.safetensors"], model.load_weights,
                                  {"verify_hash": True})
    report.loaded            # what load_weights said it loaded, both ways
    report.straight_bytes    # bytes read into parameters; report.handed_bytes: handed over

With `model` and map_files, a parameter that one stretch of a local unencrypted safetensors
file fills whole as stored (a whole tensor, whole rows of one, or fused tensors stored back to
back) is instead backed by the file's own pages, mapped copy-on-write (params/mapping.py:
no byte copied or written; that parameter's data_ptr changes). The rest is copied straight in.
Device parameters with `devices=True` (else the plan hands over anything copied to a device).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Set, Tuple

from ..ground.tensors import dtype_name
from .mapping import ModelParameters, map_spans, mappable_spans
from .plan import Piece, learn_plan
from ..ground.slices import is_whole, slice_bytes, whole_box
from ..ground.tensors import to_torch


@dataclass
class ParameterLoadReport:
    loaded: Set[str] = field(default_factory=set)
    straight_bytes: int = 0  # read straight into parameters
    straight_tensors: int = 0
    mapped_bytes: int = 0  # parameters backed by the file's pages (map_files)
    mapped_parameters: int = 0
    handed_bytes: int = 0  # read into memory of their own and handed to load_weights
    handed: Dict[str, str] = field(default_factory=dict)  # name -> why
    group_bytes: int = 0  # tensors read whole by one rank of the group, then handed to load_weights
    group_tensors: int = 0
    bytes_read: int = 0  # from the sources
    plan_seconds: float = 0.0
    seconds: float = 0.0

    def summary(self) -> str:
        reasons = sorted(set(self.handed.values()))
        why = f" ({'; '.join(reasons[:3])}{'; ...' if len(reasons) > 3 else ''})" if reasons else ""
        mapped = (f"{self.mapped_bytes / 1e6:.1f} MB of {self.mapped_parameters} parameters mapped from the "
                  f"file's pages, " if self.mapped_parameters else "")
        group = (f"{self.group_bytes / 1e6:.1f} MB of {self.group_tensors} tensors read whole by one rank and "
                 f"shared over the group, " if self.group_tensors else "")
        return (f"{mapped}{self.straight_bytes / 1e6:.1f} MB of {self.straight_tensors} tensors read straight into "
                f"the parameters, {self.handed_bytes / 1e6:.1f} MB of {len(self.handed)} handed to load_weights{why}; "
                f"{group}{self.bytes_read / 1e6:.1f} MB read, plan {self.plan_seconds:.2f} s, "
                f"all {self.seconds:.2f} s")


# TensorDeserializer keywords that are not the open's (placement: map_files decides).
_OPEN_ONLY = ("verify_hash", "process_group", "placement")


def _maps(source: str, kwargs: dict, map_files) -> bool:
    """Whether `source`'s parameters are backed by its pages, by the engine's rule
    (ringload/placement.hpp): True: wherever they may be; "cached": where the page cache holds
    the file too; "auto": as placement "auto" decides for a load into parameters."""
    from ..ground.opening import auto_placement, why_not_mappable
    if not map_files:
        return False
    if map_files is True:
        return why_not_mappable(source, "cpu", kwargs) is None
    use = "into_parameters" if map_files == "auto" else "handed_over"
    return auto_placement(source, "cpu", use, kwargs) == "mapped"


def _open_all(sources: List[str], kwargs: dict, map_files):
    """Each source opened (index only), and where each tensor name is."""
    from ..dropin.deserializer import TensorDeserializer
    opened, where = [], {}
    open_kwargs = {k: v for k, v in kwargs.items() if k not in _OPEN_ONLY}
    for source in sources:
        maps = _maps(source, kwargs, map_files)
        deserializer = TensorDeserializer(source, device="cpu", lazy_load=True,
                                          **dict(open_kwargs, **({"placement": "mapped"} if maps else {})))
        deserializer.reads.maps = maps
        opened.append(deserializer)
        for entry in deserializer.reads.entries:
            if entry.name in where:
                raise ValueError(f"ringload: the tensor {entry.name} is in two weight files: "
                                 f"{sources[where[entry.name][0]]} and {source}")
            where[entry.name] = (len(opened) - 1, entry)
    return opened, where


def _map_parameters(deserializer, entries, planned: Dict[str, List[Piece]], parameters: ModelParameters,
                    report: ParameterLoadReport, whole_tensors: bool = False) -> Dict[str, List[Piece]]:
    """Backs the parameters one stretch of this file fills whole by the file's pages
    (params/mapping.py); returns the pieces left to copy in."""
    spans, mapped_bytes = map_spans(deserializer, mappable_spans(entries, planned, parameters, whole_tensors))
    report.bytes_read += mapped_bytes
    done = set()
    for span in spans:
        report.mapped_bytes += span.nbytes
        report.mapped_parameters += 1
        done.update(id(part.piece) for part in span.parts)
    left = {}
    for entry in entries:
        pieces = [piece for piece in planned.get(entry.name, ()) if id(piece) not in done]
        if pieces:
            left[entry.name] = pieces
    return left


def _read_source(deserializer, entries, planned: Dict[str, List[Piece]], handed_names, verify: bool,
                 report: ParameterLoadReport, merge_gap=None):
    """One source's planned pieces into their places, and its handed tensors into memory of their
    own (returned as (name, tensor) in file order). One engine pass per loaded dtype and device.
    merge_gap: the most bytes between two pieces read through rather than asked for apart (None:
    the engine's; 0 in a group, where they are another rank's)."""
    groups: Dict[Tuple[object, str], List[Tuple[object, list, int]]] = {}
    handed = []
    for entry in entries:
        if entry.name in handed_names:
            groups.setdefault((None, "cpu"), []).append((entry, whole_box(entry.shape), 0))
            handed.append(entry)
            continue
        for piece in planned.get(entry.name, ()):
            wanted = dtype_name(piece.destination.dtype)
            key = (None if wanted == entry.dtype else wanted, str(piece.destination.device))  # "cuda:N"
            groups.setdefault(key, []).append((entry, piece.ranges, piece.destination.data_ptr()))
            report.straight_bytes += slice_bytes(entry, piece.ranges)
        report.straight_tensors += entry.name in planned
    tensors = {}
    for (dtype, device), requests in groups.items():
        if device != "cpu":
            requests = _stream_whole_tensors(deserializer, requests, device, dtype, verify, report)
            if not requests:
                continue
        loaded = deserializer.reads.engine.load_slices(
            [(entry.index, ranges) for entry, ranges, _ in requests], device=device, dtype=dtype, verify=verify,
            destinations=[address for _, _, address in requests], merge_gap=merge_gap, **deserializer.reads.ring())
        report.bytes_read += loaded.bytes_read
        for k, (entry, ranges, address) in enumerate(requests):
            if address == 0:
                tensors[entry.name] = to_torch(loaded, k, entry.dtype, tuple(entry.shape))
    return [(entry.name, tensors[entry.name]) for entry in handed]


def _stream_whole_tensors(deserializer, requests, device: str, dtype, verify: bool, report: ParameterLoadReport):
    """On a device, the requests for whole tensors (each once) go from the pinned ring straight
    into their parameters (the engine's load with destinations: no host copy, no device memory
    of the load's own); returns the others (rows of a tensor: cut on the host and uploaded)."""
    from ..ground.opening import format_facts
    if format_facts(deserializer.reads.engine.format)["tensors_view_storages"]:
        return requests  # storages (torch zip) take no caller destinations on a device: cut and uploaded
    whole, rest, seen = [], [], set()
    for entry, ranges, address in requests:
        if is_whole(ranges, entry.shape) and entry.index not in seen:
            seen.add(entry.index)
            whole.append((entry, address))
        else:
            rest.append((entry, ranges, address))
    if whole:
        whole.sort(key=lambda item: item[0].index)
        loaded = deserializer.reads.engine.load(
            [entry.index for entry, _ in whole], device=device, dtype=dtype, verify=verify,
            destinations=[address for _, address in whole], **deserializer.reads.ring())
        report.bytes_read += loaded.bytes_read
    return rest


def maps_files(placement: str):
    """load_into_parameters' map_files for a placement: "mapped": parameters backed by the
    file's pages where they can be (True); "arena": copied into (False); "auto": as the engine's
    rule decides for each file (ringload/placement.hpp: on one CPU or less, where the page cache
    holds it)."""
    return {"mapped": True, "auto": "auto"}.get(placement, False)


def load_into_parameters(sources: List[str], load_weights: Callable, kwargs: dict, model=None,
                         map_files=False, group=None, devices: bool = False) -> ParameterLoadReport:
    """Loads `sources` (paths or URLs, any format) into the model whose `load_weights` is given;
    kwargs are TensorDeserializer's (verify_hash, encryption, the network and ring options).
    map_files (with `model`): parameters that one stretch of a local safetensors file fills
    whole are backed by its pages instead of copied into (True; "cached": where the file is in
    the page cache). group: a torch.distributed group whose every rank calls this with its own
    model (tensor parallelism): the ranks read the checkpoint once between them
    (params/group.py). devices: parameters in CUDA memory are read into as well (whole
    tensors from the pinned ring straight into them, rows cut on the host and uploaded);
    without, what goes to a device is handed over."""
    started = time.perf_counter()
    report = ParameterLoadReport()
    # Parameters on a device are not mapped (and the engine's device loads take no mapped file).
    maps = map_files if model is not None and not devices else False
    opened, where = _open_in(group, sources, kwargs, maps)
    parameters = ModelParameters(model if maps else None)
    try:
        checkpoint = [(name, tuple(entry.shape), entry.dtype) for name, (_, entry) in where.items()]
        plan = learn_plan(load_weights, checkpoint, devices)
        report.plan_seconds = time.perf_counter() - started
        report.loaded |= plan.loaded
        report.handed = dict(plan.handed)
        if group is None:
            _read_all(opened, plan.planned(), set(plan.handed), kwargs, parameters, report, load_weights)
        else:
            _read_once_over(group, opened, where, plan, kwargs, parameters, report, load_weights)
    finally:
        for deserializer in opened:
            deserializer.close()
    report.seconds = time.perf_counter() - started
    return report


def _open_in(group, sources: List[str], kwargs: dict, map_files):
    """_open_all; in a group, a rank that cannot open a source fails every rank (the others
    would otherwise wait for it in the group's first collective until its timeout)."""
    if group is None:
        return _open_all(sources, kwargs, map_files)
    from .group import agree_reads_succeeded
    try:
        opened = _open_all(sources, kwargs, map_files)
    except Exception as error:  # told to every rank, raised on every rank
        agree_reads_succeeded(group, f"{type(error).__name__}: {error}")
        raise
    agree_reads_succeeded(group, None)
    return opened


def _read_all(opened, planned, handed: set, kwargs: dict, parameters, report: ParameterLoadReport,
              load_weights: Callable) -> None:
    """Each source's pieces into their places (mapped where the file allows it); its tensors
    the loaders compute with to load_weights, source by source."""
    verify = bool(kwargs.get("verify_hash", False))
    if len(opened) > 1 and any(deserializer.reads.signed for deserializer in opened):
        _read_side_by_side(opened, planned, handed, verify, report, load_weights)
        return
    for deserializer in opened:
        entries = deserializer.reads.entries
        to_copy = _map_parameters(deserializer, entries, planned, parameters, report) if deserializer.reads.maps \
            else planned
        whole = _read_source(deserializer, entries, to_copy, handed, verify, report)
        report.handed_bytes += sum(tensor.numel() * tensor.element_size() for _, tensor in whole)
        if whole:
            report.loaded |= set(load_weights(iter(whole)) or ())


_REPORT_COUNTS = ("straight_bytes", "straight_tensors", "bytes_read")  # what _read_source adds to


def _read_side_by_side(opened, planned, handed: set, verify: bool, report: ParameterLoadReport,
                       load_weights: Callable) -> None:
    """_read_all for signed sources: as many read at once as `ringload load DIR` reads of a signed
    folder (the engine's files_read_at_once: two per core, fewer where memory is short; the engine
    releases the GIL); each file's handed tensors go to load_weights in file order, once it is
    read and verified. Each keeps the reads in flight the engine's slots_per_file gives reads
    held until hashed (32): a parameter seldom lies at its bytes' offset in the file modulo
    4096, so the reads land in slots, each held until its bytes are hashed (8 per file, sharing
    32: 1.75 s for the 3.5 GB bench model; 16: 1.75 s; 32: 1.51 s; one file at a time: 2.2-2.5 s;
    unsigned: 1.3 s)."""
    from concurrent.futures import ThreadPoolExecutor
    from .. import _ringload
    at_once = _ringload.files_read_at_once([deserializer.reads.uri for deserializer in opened], True)
    for deserializer in opened:
        if not deserializer.reads.slot_count and not deserializer.reads.slot_size:  # the caller's ring stands
            deserializer.reads.slot_count = _ringload.slots_per_file(at_once, True)

    def read(deserializer):
        own = ParameterLoadReport()  # merged on this thread, in file order: no shared counters
        return _read_source(deserializer, deserializer.reads.entries, planned, handed, verify, own), own

    with ThreadPoolExecutor(at_once, thread_name_prefix="ringload-file") as pool:
        futures = [pool.submit(read, deserializer) for deserializer in opened]
        try:
            for future in futures:
                whole, own = future.result()
                for name in _REPORT_COUNTS:
                    setattr(report, name, getattr(report, name) + getattr(own, name))
                report.handed_bytes += sum(tensor.numel() * tensor.element_size() for _, tensor in whole)
                if whole:
                    report.loaded |= set(load_weights(iter(whole)) or ())
        except BaseException:
            for future in futures:
                future.cancel()  # the files not started yet; those reading end before the raise
            raise


def _read_once_over(group, opened, where, plan, kwargs: dict, parameters, report: ParameterLoadReport,
                    load_weights: Callable) -> None:
    """As _read_all, with the ranks of `group` splitting the reads (params/group.py): each
    its own rows straight in, the rest read whole by one rank and broadcast."""
    from .group import agree_reads_succeeded, exchange, share_over_group
    whole_only = bool(kwargs.get("verify_hash")) or "encryption" in kwargs
    checkpoint = [(name, tuple(entry.shape), slice_bytes(entry, whole_box(entry.shape)))
                  for name, (_, entry) in where.items()]
    share = share_over_group(group, checkpoint, plan.planned(), set(plan.handed), whole_only)
    read, failure = {}, None
    try:
        for deserializer in opened:
            entries = deserializer.reads.entries
            to_copy = _map_parameters(deserializer, entries, share.own, parameters, report, whole_tensors=True) \
                if deserializer.reads.maps else share.own
            read.update(_read_source(deserializer, entries, to_copy, share.owned, bool(kwargs.get("verify_hash")),
                                     report, merge_gap=0))
    except Exception as error:  # told to every rank, raised on every rank
        failure = f"{type(error).__name__}: {error}"
    agree_reads_succeeded(group, failure)
    entries = {name: entry for name, (_, entry) in where.items()}
    for received in exchange(group, share, read, entries):  # in batches of bounded bytes
        for name, tensor in received:
            nbytes = tensor.numel() * tensor.element_size()
            if name in plan.handed:
                report.handed_bytes += nbytes
            else:
                report.group_bytes += nbytes
                report.group_tensors += 1
        if received:
            report.loaded |= set(load_weights(iter(received)) or ())
        for name, _ in received:
            read.pop(name, None)  # this rank's copy goes once load_weights has it
