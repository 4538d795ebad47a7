"""safe_open: a file opened lazily, as safetensors' safe_open, for every format and source.

    with ringload.safe_open("model.safetensors", framework="pt", device="cpu") as f:   # or a URL
        names = f.keys()                       # sorted, as safetensors gives them
        weight = f.get_tensor("wte.weight")    # one tensor read
        rows = f.get_slice("wte.weight")[:1024, :]   # only its part (shape, dtype before reading)
        f.total_bytes_read                     # bytes that came from the source so far

Opening reads only the index (tensorizer, safetensors or torch zip; a path, http(s)://, s3://
or redis://). Each get_tensor is one engine load of that tensor; slices go through
load_slices (ground/slices.py), which plans every range asked together. Errors are safetensors':
SafetensorError for a missing tensor, a closed file or an index out of range (with its words),
FileNotFoundError for a missing file.
"""
from __future__ import annotations

import operator
from typing import Optional

from ..ground.crypto import DecryptionParams, secret_kwargs
from ..ground.file_objects import uri_of
from ..ground.file_reads import Entry
from ..ground.opening import check_exists, open_engine
from ..ground.slices import load_slices
from ..ground.tensors import SAFETENSORS_DTYPES, to_torch
from ..errors import SafetensorError, SliceIndexError

_FRAMEWORKS = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np"}


def _device_text(device) -> str:
    if isinstance(device, int):
        return f"cuda:{device}"
    text = str(device)
    return "cuda:0" if text == "cuda" else text


class safe_open:  # noqa: N801 (safetensors' name)
    """A file (path or URL) opened for lazy reads; a context manager.

    Args:
        filename: a path or URL of a safetensors, tensorizer or torch.save zip file.
        framework: "pt" (torch tensors) or "np" (numpy arrays, CPU).
        device: "cpu", "cuda", "cuda:N" or an int N.
        backend: safetensors' "mmap" / "pread", accepted for compatibility.
        verify_hash: check tensorizer's stored hashes of what is read.
        signature, public_key, certificate_chain, model_folder: a signed model's signature and
            whom to trust: the file is read and verified whole at open, reads served from that.
        encryption: DecryptionParams of an encrypted tensorizer file.
        network: the network options TensorDeserializer takes (connections, timeout, ...).
    """

    def __init__(self, filename, framework: str = "pt", device="cpu", *, backend: Optional[str] = None,
                 verify_hash: bool = False, encryption: Optional[DecryptionParams] = None, **network):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"framework {framework} is not supported by ringload.safe_open (pt or np)")
        if backend is not None and backend not in ("mmap", "pread"):
            raise ValueError(f"backend must be mmap or pread, not {backend!r}")
        self._framework = _FRAMEWORKS[framework]
        self._device = _device_text(device)
        if self._framework == "np" and self._device != "cpu":
            raise SafetensorError(f"Device {self._device} is not supported for framework numpy")
        self._verify = bool(verify_hash)
        self._bytes_read = 0
        uri = uri_of(filename)
        check_exists(uri)
        # expected_format: a file the engine does not recognise is refused with what is wrong
        # with its safetensors header, as safetensors words it.
        self._engine = open_engine(uri, expected_format="safetensors", **secret_kwargs(encryption), **network)
        rows = self._engine.tensors()
        self._entries = [Entry(row) for row in rows]
        self._by_name = {entry.name: entry for entry in self._entries}
        self._metadata = dict(self._engine.metadata) or None
        # A signed file is read and verified whole once, here; reads are served from that.
        self._held = None
        if network.get("signature") is not None:
            self._held = self._load_all()

    # --- safetensors' methods --------------------------------------------------------------
    def keys(self) -> list:
        """Tensor names, sorted (as safetensors gives them)."""
        self._open_engine()
        return sorted(self._by_name)

    def offset_keys(self) -> list:
        """Tensor names in the order of their data in the file."""
        self._open_engine()
        return [entry.name for entry in self._entries]

    def metadata(self) -> Optional[dict]:
        """safetensors' __metadata__ (str to str); None where the file has none."""
        self._open_engine()
        return None if self._metadata is None else dict(self._metadata)

    def get_tensor(self, name: str):
        """One tensor, read now."""
        entry = self._entry(name)
        if self._held is not None:
            return self._handed_out(self._held[name].clone())
        loaded = self._open_engine().load([entry.index], device=self._device, dtype=None, verify=self._verify,
                                          destinations=None, progress=None, contiguous=False,
                                          **_ring_for(entry.data_length))
        self._bytes_read += loaded.bytes
        return self._handed_out(to_torch(loaded, 0, entry.dtype, entry.shape))

    def get_tensors(self) -> dict:
        """Every tensor, in one engine load, by name."""
        self._open_engine()
        if self._held is not None:
            return {name: self._handed_out(tensor.clone()) for name, tensor in self._held.items()}
        return {name: self._handed_out(tensor) for name, tensor in self._load_all().items()}

    def get_slice(self, name: str) -> "SafeSlice":
        """A handle on one tensor: its shape and dtype, and [...] to read a part of it."""
        return SafeSlice(self, self._entry(name))

    def get_slices(self, wanted) -> list:
        """Many parts at once: wanted is a list of (name, index); one load_slices call plans
        all of them (one pass through the source)."""
        parsed = [(self._entry(name), index) for name, index in wanted]
        return self._read_parts([(entry, _parse_index(index, entry.shape)) for entry, index in parsed])

    @property
    def total_bytes_read(self) -> int:
        """Bytes that came from the source through this object (tensors and slices)."""
        return self._bytes_read

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- inside ----------------------------------------------------------------------------
    def _open_engine(self):
        if self._engine is None:
            raise SafetensorError("File is closed")
        return self._engine

    def _entry(self, name: str) -> Entry:
        self._open_engine()
        entry = self._by_name.get(name)
        if entry is None:
            raise SafetensorError(f"File does not contain tensor {name}")
        return entry

    def _load_all(self) -> dict:
        """Every tensor as torch holds it, by name: one engine load."""
        engine = self._open_engine()
        if not self._entries:
            return {}
        loaded = engine.load([entry.index for entry in self._entries], device=self._device, dtype=None,
                             verify=self._verify, destinations=None, slot_size=0, slot_count=0, threads=0,
                             progress=None, contiguous=False)
        self._bytes_read += loaded.bytes
        return {entry.name: to_torch(loaded, k, entry.dtype, entry.shape) for k, entry in enumerate(self._entries)}

    def _handed_out(self, tensor):
        return tensor.numpy() if self._framework == "np" else tensor

    def _read_parts(self, parts) -> list:
        """parts: (entry, _Parsed); one load_slices for all of them."""
        engine = self._open_engine()
        if self._held is not None:
            return [self._handed_out(parsed.finish(self._held[entry.name][tuple(slice(a, b) for a, b in
                                                                                  parsed.ranges)].clone()))
                    for entry, parsed in parts]
        requests = [(entry, parsed.ranges) for entry, parsed in parts]
        tensors, bytes_read = load_slices(engine, self._entries, requests, self._device, self._verify)
        self._bytes_read += bytes_read
        return [self._handed_out(parsed.finish(tensor)) for (_, parsed), tensor in zip(parts, tensors)]


def _ring_for(length_bytes: int) -> dict:
    """The engine's ring and workers for one tensor: a small one is read through a few small
    slots by one worker (half the engine's fixed cost per load: 0.9 ms instead of 2.2 ms
    measured for a 64-byte tensor); a large one gets the defaults (128 MiB, one worker per core)."""
    if length_bytes > _SMALL_TENSOR_BYTES:
        return {"slot_size": 0, "slot_count": 0, "threads": 0}
    slot_size = 64 << 10
    while slot_size < length_bytes and slot_size < (4 << 20):
        slot_size *= 2
    return {"slot_size": slot_size, "slot_count": 4, "threads": 1}


_SMALL_TENSOR_BYTES = 4 << 20


class SafeSlice:
    """One tensor of a safe_open: get_shape(), get_dtype() and [...] (ints, slices with
    negative or None bounds and positive steps, an Ellipsis, () or [] as safetensors takes)."""

    def __init__(self, owner: safe_open, entry: Entry):
        self._owner, self._entry = owner, entry

    def get_shape(self) -> list:
        return list(self._entry.shape)

    def get_dtype(self) -> str:
        return SAFETENSORS_DTYPES.get(self._entry.dtype, self._entry.dtype)

    def __getitem__(self, index):
        return self._owner._read_parts([(self._entry, _parse_index(index, self._entry.shape))])[0]

    def __len__(self) -> int:
        if not self._entry.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._entry.shape[0]


class _Parsed:
    """An index normalized: one (start, stop) per dimension, and what to do after the read
    (drop the int-indexed dimensions, apply steps)."""

    __slots__ = ("ranges", "after")

    def __init__(self, ranges: list, after: tuple):
        self.ranges, self.after = ranges, after

    def finish(self, tensor):
        if all(isinstance(item, slice) and item == slice(None) for item in self.after):
            return tensor
        return tensor[self.after].contiguous()


def _items_of(index, ndim: int) -> list:
    if isinstance(index, list):
        if index:
            raise SafetensorError("Non empty lists are not implemented")
        return [slice(0, 0)]
    items = list(index) if isinstance(index, tuple) else [index]
    ellipses = sum(1 for item in items if item is Ellipsis)
    if ellipses > 1:
        raise SafetensorError("an index can only have a single ellipsis ('...')")
    if ellipses:
        at = items.index(Ellipsis)
        fill = max(0, ndim - (len(items) - 1))
        items[at:at + 1] = [slice(None)] * fill
    return items


def _bound_text(value) -> str:
    return "" if value is None else str(value)


def _parse_index(index, shape: tuple) -> _Parsed:
    """safetensors' indexing rules and error words (an int or a stop past the end is refused);
    beyond them, as in torch: negative slice bounds, positive steps, a start past the end
    (empty). safetensors refuses negative bounds, ignores steps and refuses such starts."""
    shape = tuple(shape)
    items = _items_of(index, len(shape))
    shown, converted = [], []
    for dim, item in enumerate(items):
        if isinstance(item, slice):
            start, stop, step = (None if v is None else operator.index(v) for v in (item.start, item.stop, item.step))
            if step is not None and step <= 0:
                raise ValueError("slice step must be positive")
            shown.append(f"{_bound_text(start)}:{_bound_text(stop)}")
            converted.append((start, stop, step))
        else:
            try:
                position = operator.index(item)
            except TypeError:
                raise TypeError(f"a slice index is an int, a slice, '...', () or [], not {type(item).__name__}") \
                    from None
            size = shape[dim] if dim < len(shape) else 0
            if position < 0 and dim < len(shape):
                if position + size < 0:
                    raise SliceIndexError(f"Invalid index {position} for dimension {dim} of size {size}")
                position += size
            shown.append(str(position))
            converted.append(position)
    where = f"Error during slicing [{', '.join(shown)}] with shape {list(shape)}"
    if len(items) > len(shape):
        raise SliceIndexError(f"{where}: more slicing indexes than dimensions in tensor")
    ranges, after = [], []
    for dim, size in enumerate(shape):
        item = converted[dim] if dim < len(converted) else (None, None, None)
        if isinstance(item, int):
            if item >= size:
                raise SliceIndexError(f"{where}: index {item} out of bounds for tensor dimension #{dim} of size {size}")
            ranges.append((item, item + 1))
            after.append(0)
            continue
        start, stop, step = item
        start = 0 if start is None else (max(0, start + size) if start < 0 else start)
        stop = size if stop is None else (max(0, stop + size) if stop < 0 else stop)
        if stop > size:
            raise SliceIndexError(f"{where}: index {stop - 1} out of bounds for tensor dimension #{dim} of size {size}")
        start = min(start, stop)  # past the end, or after stop: empty, as in torch
        ranges.append((start, stop))
        after.append(slice(None, None, step) if step not in (None, 1) else slice(None))
    return _Parsed(ranges, tuple(after))
