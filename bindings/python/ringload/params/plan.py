"""Where each checkpoint tensor ends up in a model's parameters, learned from the model's own
loading code.

A server's `load_weights(weights)` takes (name, tensor) pairs and copies each into its
parameters: whole, narrowed to this rank's rows or columns (tensor parallelism), or into a part
of a fused parameter (q/k/v into qkv_proj, gate/up into gate_up_proj). Instead of reading every
tensor into memory of our own and letting it copy, this runs `load_weights` once over stand-ins
(meta tensors that carry the checkpoint name) and records every `copy_` from a stand-in into real
memory: which part of the checkpoint tensor (a box of it) goes to which parameter view. The
engine then reads each part straight into its place (parameter_load.py).

    plan = learn_plan(model.load_weights, [("model.embed_tokens.weight", (32000, 2048), "bfloat16"), ...])
    plan.pieces["model.embed_tokens.weight"]   # [Piece(ranges=[(0, 32000), (0, 2048)], destination=...)]
    plan.handed                                # names the loader computes with: handed over as tensors

A name is handed over (read as a tensor and given to `load_weights` as today) when its loader
does anything with it but views and one copy into plain host memory: arithmetic, concatenation,
a transposed copy, a dtype conversion between non-floating types, a copy into device memory, or
when something writes to its destination after the copy (a permutation in place), or two names
write the same bytes. Such ops run on the meta stand-ins (shapes only), so the loader goes on.
"""
from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from ..ground.tensors import dtype_name

# Ops that only look at a tensor or make a view of it: on a stand-in they make a stand-in, on a
# destination they do not change its bytes.
_VIEWS = frozenset({
    "narrow", "view", "reshape", "t", "transpose", "__getitem__", "select", "chunk", "split", "tensor_split",
    "unsqueeze", "squeeze", "flatten", "permute", "expand", "expand_as", "detach", "view_as", "reshape_as",
    "unbind", "unflatten", "movedim", "swapaxes", "as_strided", "contiguous", "data", "T", "mT", "H", "mH",
    "requires_grad_",
})
_LOOKS = frozenset({
    "size", "dim", "numel", "stride", "is_contiguous", "element_size", "nelement", "storage_offset", "__len__",
    "ndimension", "is_floating_point", "is_complex", "data_ptr", "__format__", "__repr__", "__hash__", "__eq__",
    "__ne__", "__bool__", "get_device", "type", "__reduce_ex__", "untyped_storage", "storage", "is_pinned",
})
_MOVES = frozenset({"to", "cpu", "cuda", "float", "half", "bfloat16", "double", "type_as"})
_FLOATING = ("float64", "float32", "float16", "bfloat16")


@dataclass
class Piece:
    """One copy the loader made: `ranges` (start, stop per dimension) of the checkpoint tensor go,
    in C order, to `destination` (a contiguous host view of a parameter)."""
    ranges: List[Tuple[int, int]]
    destination: object  # torch.Tensor


@dataclass
class Plan:
    pieces: Dict[str, List[Piece]] = field(default_factory=dict)
    handed: Dict[str, str] = field(default_factory=dict)  # name -> why it is handed over
    loaded: Set[str] = field(default_factory=set)  # what load_weights said it loaded

    def planned(self) -> Dict[str, List[Piece]]:
        return {name: pieces for name, pieces in self.pieces.items() if name not in self.handed}


def _name(function) -> str:
    name = getattr(function, "__name__", "")
    if name == "__get__":  # a property (shape, data, T): the descriptor's name
        return getattr(getattr(function, "__self__", None), "__name__", name)
    return name


def _c_strides(shape) -> List[int]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return strides[::-1]


def box_of(base_shape, view) -> Optional[List[Tuple[int, int]]]:
    """The ranges, one per dimension of the checkpoint tensor (C order, `base_shape`), that `view`
    (a view of it: shape, strides, offset) covers in C order; None where it is no such box (a
    transpose, a step)."""
    shape, strides, offset = tuple(view.shape), tuple(view.stride()), view.storage_offset()
    base = _c_strides(base_shape)
    if len(shape) == len(base_shape) and all(s == b for s, b, n in zip(strides, base, shape) if n > 1):
        ranges = []
        for extent, step, size in zip(shape, base, base_shape):
            start, offset = divmod(offset, step) if step else (0, offset)
            if start + extent > size:
                return None
            ranges.append((start, start + extent))
        return ranges if offset == 0 else None
    # A contiguous reshape of whole rows (view(-1), a flattened row range).
    numel = math.prod(shape)
    if not view.is_contiguous() or not base_shape or numel == 0:
        return None
    row = base[0]
    if offset % row or numel % row:
        return None
    first = offset // row
    return [(first, first + numel // row)] + [(0, extent) for extent in base_shape[1:]]


class _Intervals:
    """Byte ranges of host memory, each with the checkpoint name that wrote it."""

    def __init__(self):
        self._starts: List[int] = []
        self._items: List[Tuple[int, int, str]] = []
        self._longest = 0

    def add(self, start: int, end: int, name: str) -> None:
        at = bisect.bisect(self._starts, start)
        self._starts.insert(at, start)
        self._items.insert(at, (start, end, name))
        self._longest = max(self._longest, end - start)

    def overlapping(self, start: int, end: int) -> List[str]:
        names = []
        for k in range(bisect.bisect_left(self._starts, end) - 1, -1, -1):
            first, last, name = self._items[k]
            if first + self._longest <= start:  # none earlier reaches `start`
                break
            if last > start:
                names.append(name)
        return names


def _byte_span(tensor) -> Optional[Tuple[int, int]]:
    """[first, last) bytes a real tensor's elements occupy."""
    import torch
    if not isinstance(tensor, torch.Tensor) or tensor.device.type == "meta" or tensor.numel() == 0:
        return None
    reach = sum((size - 1) * step for size, step in zip(tensor.shape, tensor.stride()) if size > 0)
    start = tensor.data_ptr()
    return start, start + (reach + 1) * tensor.element_size()


@functools.lru_cache(maxsize=None)
def _stand_in_type():
    """The torch.Tensor subclass that marks a stand-in (made on first use: torch is optional)."""
    import torch

    class _StandIn(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl

    return _StandIn


def _is_stand_in(value) -> bool:
    return isinstance(value, _stand_in_type())


def _stand_in(meta, name: str, base_shape: tuple, computed: Optional[str]):
    """`meta` marked as checkpoint tensor `name` (of `base_shape`); computed: why its values are
    no longer the checkpoint's bytes, or None."""
    made = meta.as_subclass(_stand_in_type())
    made._ringload = (name, base_shape, computed)
    return made


def _flatten(value, found: list) -> list:
    """Every tensor in `value` (nested lists, tuples and dicts), appended to `found`."""
    import torch
    if isinstance(value, (list, tuple)):
        for item in value:
            _flatten(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _flatten(item, found)
    elif isinstance(value, torch.Tensor):
        found.append(value)
    return found


def _to_meta(value):
    """Stand-ins as plain meta tensors, real tensors as meta tensors of their shape."""
    import torch
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(item) for item in value)
    if _is_stand_in(value):
        return value.as_subclass(torch.Tensor)
    if isinstance(value, torch.Tensor) and value.device.type != "meta":
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    return value


def _wrap(result, name: str, base_shape: tuple, computed: Optional[str]):
    """An op's result (a tensor, or a list or tuple of them) as stand-ins of `name`."""
    import torch
    if isinstance(result, torch.Tensor):
        return _stand_in(result, name, base_shape, computed)
    if isinstance(result, (list, tuple)):
        return type(result)(_wrap(item, name, base_shape, computed) for item in result)
    return result


class _Recording:
    """One run's record: each op on stand-ins becomes pieces of `plan` or a handed-over name."""

    def __init__(self, plan: Plan, devices: bool):
        self.plan = plan
        self.devices = devices
        self.destinations = _Intervals()  # the bytes each recorded copy wrote

    def hand(self, name: str, why: str) -> None:
        self.plan.handed.setdefault(name, why)

    def on_op(self, func, args, kwargs):
        """What an op does on stand-ins: records a copy, looks, moves, or computes (handed over)."""
        name = _name(func)
        if getattr(func, "__name__", "") == "__get__" and name not in _VIEWS:
            name = "size"  # a property that only looks (shape, dtype, device, ndim, ...)
        tensors = _flatten((args, kwargs), [])
        stand_ins = [t for t in tensors if _is_stand_in(t)]
        if not stand_ins:
            if name not in _VIEWS and name not in _LOOKS:
                self.touch(tensors, name)
            return func(*args, **kwargs)
        if name in ("copy_", "__setitem__") and not _is_stand_in(args[0]):
            destination = args[0] if name == "copy_" else args[0].__getitem__(args[1])
            value = args[1] if name == "copy_" else args[2]
            if _is_stand_in(value) and len(stand_ins) == 1:
                self.record_copy(destination, value)
                return args[0]
        if name in _LOOKS:
            return func(*_to_meta(args), **kwargs)
        if name in _MOVES:
            return self._move(func, name, args, kwargs, stand_ins[0])
        return self._compute(func, name, args, kwargs, tensors, stand_ins)

    def _move(self, func, name: str, args, kwargs, source):
        result = func(*_to_meta(args), **{k: v for k, v in kwargs.items() if k != "device"})
        if _is_tensor(result) and result.dtype == source.dtype:
            return source  # a move to the data's device: the stand-in stays what it is
        source_name, base_shape, computed = source._ringload
        return _wrap(result, source_name, base_shape, computed or f"converted ({name})")

    def _compute(self, func, name: str, args, kwargs, tensors, stand_ins):
        source_name, base_shape, computed = stand_ins[0]._ringload
        for other in stand_ins[1:]:
            if other._ringload[0] != source_name:
                self.hand(other._ringload[0], f"combined with {source_name} ({name})")
                computed = computed or f"combined with {other._ringload[0]} ({name})"
        real = [t for t in tensors if not _is_stand_in(t)]
        if real and name.endswith("_"):
            self.touch(real, name)
        result = func(*_to_meta(args), **{k: _to_meta(v) for k, v in kwargs.items()})
        if name not in _VIEWS:
            computed = computed or f"computed with ({name})"
            self.hand(source_name, computed)
        return _wrap(result, source_name, base_shape, computed)

    def record_copy(self, destination, source) -> None:
        name, base_shape, computed = source._ringload
        span = _byte_span(destination)
        if span is not None:
            for other in self.destinations.overlapping(*span):
                self.hand(other, f"its destination is written by {name} too")
                if other != name:
                    self.hand(name, f"its destination is written by {other} too")
            self.destinations.add(span[0], span[1], name)
        if computed:
            return self.hand(name, computed)
        if destination.device.type != "cpu" and not (self.devices and destination.device.type == "cuda"):
            return self.hand(name, f"copied to {destination.device} (not planned for this load)")
        if not destination.is_contiguous() or tuple(destination.shape) != tuple(source.shape):
            return self.hand(name, "copied into a strided or broadcast destination")
        stored, wanted = dtype_name(source.dtype), dtype_name(destination.dtype)
        if stored != wanted and not (stored in _FLOATING and wanted in _FLOATING):
            return self.hand(name, f"converted from {stored} to {wanted}")
        ranges = box_of(base_shape, source)
        if ranges is None:
            return self.hand(name, "copied from a transposed or stepped view")
        self.plan.pieces.setdefault(name, []).append(Piece(ranges, destination))

    def touch(self, tensors, function_name: str) -> None:
        """Real tensors an op may change: a recorded destination among them is handed over."""
        for tensor in tensors:
            span = _byte_span(tensor)
            if span is not None:
                for name in self.destinations.overlapping(*span):
                    self.hand(name, f"its destination is changed after the copy ({function_name})")


def _is_tensor(value) -> bool:
    import torch
    return isinstance(value, torch.Tensor)


@functools.lru_cache(maxsize=None)
def _recorder_type():
    """The TorchFunctionMode that hands every op to its _Recording (made on first use)."""
    from torch.overrides import TorchFunctionMode

    class _Recorder(TorchFunctionMode):
        recording: _Recording

        def __torch_function__(self, func, types, args=(), kwargs=None):
            return self.recording.on_op(func, args, kwargs or {})

    return _Recorder


def _recorder(recording: _Recording):
    mode = _recorder_type()()
    mode.recording = recording
    return mode


def learn_plan(load_weights: Callable[[Iterable], Optional[Iterable[str]]],
               checkpoint: List[Tuple[str, tuple, str]], devices: bool = False) -> Plan:
    """Runs `load_weights` over stand-ins of `checkpoint` ((name, shape, dtype name) each) and
    returns where each name's bytes go. Where the run fails as a whole (a loader that needs the
    values, such as .item()), each name is tried on its own, and the names whose run fails are
    handed over. devices: copies into CUDA memory are planned too (else handed over)."""
    plan = Plan()
    try:
        _run(plan, load_weights, checkpoint, devices)
        return plan
    except Exception:  # the loader needed values: one name at a time, so that only those fail
        pass
    plan = Plan()
    for entry in checkpoint:
        attempt = Plan(handed=plan.handed)
        try:
            _run(attempt, load_weights, [entry], devices)
        except Exception as error:  # noqa: BLE001 (any failure hands the name over)
            plan.handed.setdefault(entry[0], f"its loader needs the values ({type(error).__name__}: {error})")
            continue
        plan.loaded |= attempt.loaded
        for name, pieces in attempt.pieces.items():
            plan.pieces.setdefault(name, []).extend(pieces)
    return plan


def _run(plan: Plan, load_weights, checkpoint, devices: bool) -> None:
    import torch
    recording = _Recording(plan, devices)

    def stand_ins():
        for name, shape, dtype in checkpoint:
            meta = torch.empty(tuple(shape), dtype=getattr(torch, dtype), device="meta")
            yield name, _stand_in(meta, name, tuple(shape), None)

    with torch.no_grad(), _recorder(recording):
        loaded = load_weights(stand_ins())
    plan.loaded |= set(loaded or ())
