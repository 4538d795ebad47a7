"""TensorDeserializer: a read-only Mapping of a file's tensors, as tensorizer's.

Reads tensorizer, safetensors and torch.save zip files (told apart by their first bytes).

    with ringload.TensorDeserializer("model.tensors", device="cuda", verify_hash=True) as d:
        model.load_state_dict(d)            # or: d.load_into_module(model) (no second copy)

The engine loads every wanted tensor in one pass (GIL released) into one host arena or one
device allocation; tensors are zero-copy views that keep it alive. lazy_load=True loads each
tensor on first access instead. device="meta" reads no data at all.
"""
from __future__ import annotations

import collections.abc
import os
import types
from typing import Any, Callable, Iterator, Optional

from . import _ringload
from ._crypto import DecryptionParams, secret_kwargs
from ._progress import progress_callback
from ._slices import drop_dims, load_slices, normalize_index
from ._tensors import CONVERTIBLE, loaded_dtype, to_numpy, to_torch, torch_dtype

FilterFunc = Callable[[str], bool]
_TYPE_PARAM, _TYPE_BUFFER, _TYPE_STATE_DICT = 0, 1, 2


def _default_device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _device_text(device) -> str:
    text = str(device)
    return "cuda:0" if text == "cuda" else text


def _dtype_name(dtype) -> Optional[str]:
    if dtype is None:
        return None
    return str(dtype).replace("torch.", "")


def _uri_of(file_obj) -> str:
    if isinstance(file_obj, (str, os.PathLike)):
        return os.fspath(file_obj)
    name = getattr(file_obj, "name", None)
    if isinstance(name, str):
        return name  # an open file: ringload reads it by its path
    raise TypeError("ringload reads paths and URLs (str or os.PathLike), or open files that have a .name")


class _Entry:
    """One tensor of the index."""

    __slots__ = ("index", "name", "path", "dtype", "shape", "is_meta", "module_index", "tensor_type",
                 "byte_length", "data_length")

    def __init__(self, row: dict):
        self.index = row["index"]
        self.path = tuple(row["path"])
        raw_name = row["name"]
        # Flat names are str keys; structured ones are shown as dotted paths.
        self.name = (raw_name.decode("utf-8", "surrogateescape") if len(self.path) == 1
                     else ".".join(str(c) for c in self.path))
        self.dtype, self.shape = row["dtype"], tuple(row["shape"])
        self.is_meta, self.byte_length, self.data_length = row["is_meta"], row["byte_length"], row["data_length"]
        self.module_index, self.tensor_type = row["module_index"], row["tensor_type"]

    @classmethod
    def _from_tuple(cls, row: tuple) -> "_Entry":
        """From the engine's tensor_rows() (no dict per tensor: a million-tensor index)."""
        entry = cls.__new__(cls)
        (entry.index, raw_name, entry.path, entry.dtype, entry.shape, entry.byte_length, entry.data_length,
         entry.is_meta, entry.module_index, entry.tensor_type) = row
        entry.name = (raw_name.decode("utf-8", "surrogateescape") if len(entry.path) == 1
                      else ".".join(str(c) for c in entry.path))
        return entry


class TensorDeserializer(collections.abc.Mapping):
    """A tensorizer file or URL (http(s)://, s3://, redis://) as a Mapping of names to tensors.

    Args:
        file_obj: a path, a URL, or an open file (read by its path).
        device: "cpu", "cuda", "cuda:N" or "meta"; None: "cuda" where torch sees a GPU, else "cpu".
        filter_func: which tensors (by name) to load; the others are not in the mapping.
        dtype: floating tensors become this dtype on the way (others keep theirs).
        lazy_load: load each tensor when first accessed instead of all at once.
        verify_hash: check each tensor's stored CRC32 and SHA-256.
        encryption: DecryptionParams for an encrypted file.
        ring_bytes, slot_size, threads: the engine's ring (default 128 MiB of 4 MiB slots) and
            worker threads (default one per core).
        progress: called as progress(bytes_done, bytes_total, tensors_done, tensors_total);
            raising in it stops the load (CancelledError).
        progress_bar: a progress bar on stderr (tqdm's where installed): None (default) draws
            one for loads over 64 MiB when stderr is a terminal (RINGLOAD_PROGRESS=0/1 in the
            environment turns bars off/on everywhere), True always, False never; a
            progress callback replaces it.
        read_mode: "auto", "direct" (O_DIRECT) or "buffered".
        placement: where a load puts the tensors: "auto" (today the arena), "arena" (memory of
            the load's own, read into through the ring) or "mapped" (left in the file's pages,
            mapped copy-on-write: no copy, no fresh memory; local safetensors files on the CPU
            only, tensors as stored, no verify_hash; otherwise refused with the reason).
        connections, streams, timeout, attempts, http_version, ca_file, insecure, s3_endpoint:
            network options, as the CLI's.
        process_group: a torch.distributed group whose every rank makes the same call: each
            rank reads a share of the bytes and the group's collectives move them, so the file
            is read once per group (ringload/_distributed.py). Every rank gets every tensor;
            with lazy_load, every rank must access the tensors in the same order.
    """

    def __init__(self, file_obj, device=None, filter_func: Optional[FilterFunc] = None, dtype=None, *,
                 lazy_load: bool = False, plaid_mode: Optional[bool] = None, num_readers: Optional[int] = None,
                 verify_hash: Optional[bool] = None, encryption: Optional[DecryptionParams] = None,
                 ring_bytes: int = 0, slot_size: int = 0, threads: int = 0,
                 progress: Optional[Callable[[int, int, int, int], Any]] = None, progress_bar: Optional[bool] = None,
                 read_mode: str = "auto",
                 placement: str = "auto", process_group=None, **network):
        del plaid_mode, num_readers  # tensorizer's knobs; the engine needs neither
        self._device = _device_text(device if device is not None else _default_device())
        self._dtype = _dtype_name(dtype)
        if self._dtype is not None and self._dtype not in CONVERTIBLE:
            raise ValueError(f"dtype must be one of {', '.join(CONVERTIBLE)}, not {self._dtype}")
        self._verify_hash = bool(verify_hash)
        self._slot_size = slot_size
        self._slot_count = (ring_bytes // (slot_size or 4 << 20)) if ring_bytes else 0
        self._threads = threads
        self._progress = progress if progress is not None else progress_callback(progress_bar, _uri_of(file_obj))
        self._group = process_group
        self._engine = _ringload.Deserializer(_uri_of(file_obj), read_mode=read_mode, placement=placement,
                                              **secret_kwargs(encryption),
                                              **network)
        entries = [_Entry._from_tuple(row) for row in self._engine.tensor_rows()]
        self._entries = [e for e in entries if filter_func is None or filter_func(e.name)]
        self._by_path = {e.path: e for e in self._entries}
        self._structure = self._build_structure()
        self._cache: dict[int, Any] = {}
        self._bytes_read = 0
        if not lazy_load:
            self._load(self._entries, self._verify_hash)

    # --- Mapping -------------------------------------------------------------------------
    def __getitem__(self, key):
        branch = self._structure[key]
        if isinstance(branch, _Entry):
            return self._tensor(branch)
        return self._proxy(branch)

    def __iter__(self) -> Iterator:
        return iter(self._structure)

    def __len__(self) -> int:
        return len(self._structure)

    def __contains__(self, key) -> bool:
        return key in self._structure

    # --- tensorizer's methods ------------------------------------------------------------
    def read_tensors(self, filter_func: Optional[FilterFunc] = None, num_tensors: int = -1,
                     verify_hash: Optional[bool] = None):
        """Yields (module_idx, tensor_type, name, tensor): the tensors loaded already in file
        order, then (lazy_load=True) the others as they land, in the order they complete
        (close to file order), each cached as it comes. Leaving the loop early cancels the
        rest of the load."""
        from ._stream import stream_entries
        wanted = self._wanted(filter_func, num_tensors)
        missing = [e for e in wanted if e.index not in self._cache]
        if self._device == "meta":
            self._load(missing, False)
            missing = []
        for entry in wanted:
            if entry.index in self._cache:
                yield entry.module_index, entry.tensor_type, entry.name, self._cache[entry.index]
        for entry, tensor in stream_entries(self, missing, self._verify(verify_hash)):
            self._cache[entry.index] = tensor
            self._bytes_read += entry.byte_length
            yield entry.module_index, entry.tensor_type, entry.name, tensor

    def read_numpy_arrays(self, filter_func: Optional[FilterFunc] = None, num_tensors: int = -1,
                          allow_raw_data: bool = False, verify_hash: Optional[bool] = None):
        """Yields (module_idx, tensor_type, name, array, is_opaque, torch_dtype) in file order,
        loaded to host memory; works without torch. A dtype numpy lacks (bfloat16, ...) is
        "opaque": its bytes as void items, allowed only with allow_raw_data=True."""
        if self._device != "cpu":
            raise RuntimeError("read_numpy_arrays is only valid when deserializing to the CPU")
        wanted = self._wanted(filter_func, num_tensors)
        loaded = self._engine_load(wanted, "cpu", self._verify(verify_hash))
        for k, entry in enumerate(wanted):
            entry.module_index = loaded.module_index(k)
            dtype = self._loaded_dtype(entry)
            array, opaque = to_numpy(loaded, k, dtype, entry.shape)
            if opaque and not allow_raw_data:
                raise ValueError(f"tensor {entry.name} has dtype {dtype}, which numpy cannot represent; "
                                 "pass allow_raw_data=True for its raw bytes")
            yield (entry.module_index, entry.tensor_type, entry.name, array, opaque,
                   f"torch.{dtype}" if opaque else None)

    def read_slices(self, slices: dict, verify_hash: Optional[bool] = None) -> dict:
        """Parts of tensors, read in one pass: {name: index} -> {name: tensor}, where index is what
        tensor[index] takes (ints, slices with step 1, an Ellipsis). Only the bytes of the slices
        are read (verify_hash and encrypted files read the whole tensors: their hashes and boxes
        cover them); total_bytes_read grows by what came from the source."""
        by_name = {e.name: e for e in self._entries}
        requests, cuts = [], []
        for name, key in slices.items():
            entry = by_name.get(name)
            if entry is None:
                raise KeyError(name)
            ranges, dropped = normalize_index(key, entry.shape)
            requests.append((entry, ranges))
            cuts.append((ranges, dropped))
        tensors, bytes_read = load_slices(self._engine, None, requests, self._device, self._verify(verify_hash),
                                          self._dtype)
        self._bytes_read += bytes_read
        return {name: drop_dims(tensor, *cut) for name, tensor, cut in zip(slices, tensors, cuts)}

    def tree(self, prefix=None, *, default: Any = None, filter_func: Optional[FilterFunc] = None):
        """The (sub)tree under `prefix` as nested dicts and lists of tensors (lists where the
        keys are list indexes), or a leaf tensor; `default` where nothing matches."""
        node: Any = self._structure
        for component in tuple(prefix or ()):
            if not isinstance(node, dict) or component not in node:
                return default
            node = node[component]
        entries = self._leaves(node)
        if filter_func is not None:
            entries = [e for e in entries if filter_func(e.name)]
        if not entries:
            return default
        self._load([e for e in entries if e.index not in self._cache], self._verify_hash)
        chosen = {e.index for e in entries}
        return self._materialize(node, chosen)

    def load_into_module(self, m, filter_func: Optional[FilterFunc] = None,
                         verify_hash: Optional[bool] = None) -> int:
        """Loads the parameters and buffers written by write_module into `m`: straight into
        its existing tensors where they match in shape, dtype and device (no second copy of
        the weights), else as new ones, as tensorizer does. Returns the number loaded."""
        import torch
        modules = dict(m.named_modules())
        wanted = self._wanted(filter_func, -1)
        in_place, fresh = [], []
        for entry in wanted:
            if entry.tensor_type == _TYPE_STATE_DICT:
                raise NotImplementedError(
                    "This was serialized using TensorSerializer.write_state_dict(), so it cannot be loaded "
                    "using TensorDeserializer.load_into_module(). Use the TensorDeserializer object directly "
                    "as a state_dict mapping instead.")
            if entry.tensor_type not in (_TYPE_PARAM, _TYPE_BUFFER):
                raise RuntimeError(f"Invalid tensor type: {entry.tensor_type}")
            if len(entry.path) != 1:
                raise NotImplementedError("Cannot deserialize structured tensor keys as a module; "
                                          "try using the TensorDeserializer directly as a state_dict mapping instead.")
            owner_path, _, attr = entry.name.rpartition(".")
            if owner_path not in modules:
                raise KeyError(f"{entry.name}: the module has no submodule '{owner_path}'")
            module = modules[owner_path]
            current = getattr(module, attr, None)
            if isinstance(current, torch.Tensor) and self._fits(entry, current):
                in_place.append((entry, current))
            else:
                fresh.append((entry, module, attr))
        verify = self._verify(verify_hash)
        by_device: dict[str, list] = {}
        for entry, current in in_place:
            by_device.setdefault(_device_text(current.device), []).append((entry, current))
        for device, pairs in by_device.items():
            with torch.no_grad():
                self._engine_load([e for e, _ in pairs], device, verify, [t.data_ptr() for _, t in pairs])
        if fresh:
            self._load([e for e, _, _ in fresh if e.index not in self._cache], verify)
            for entry, module, attr in fresh:
                tensor = self._cache[entry.index]
                if entry.tensor_type == _TYPE_PARAM:
                    module.register_parameter(attr, torch.nn.Parameter(tensor, requires_grad=False))
                else:
                    module.register_buffer(attr, tensor)
        return len(wanted)

    def flat_tensors(self) -> dict:
        """Every (filtered) tensor by its flat name (nested paths joined with '.'), loaded."""
        self._load([e for e in self._entries if e.index not in self._cache], self._verify_hash)
        return {e.name: self._tensor(e) for e in self._entries}

    @property
    def total_tensor_bytes(self) -> int:
        """Bytes of tensor data stored in the file for the tensors in the mapping (meta: none)."""
        return sum(e.data_length for e in self._entries)

    @property
    def total_bytes_read(self) -> int:
        return self._bytes_read

    def close(self) -> None:
        """Lets the file go; tensors already handed out stay valid."""
        self._engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- inside ----------------------------------------------------------------------------
    def _verify(self, verify_hash: Optional[bool]) -> bool:
        return self._verify_hash if verify_hash is None else bool(verify_hash)

    def _engine_load(self, entries, device: str, verify: bool, destinations=None):
        """One engine load of `entries` with this deserializer's dtype, ring and progress. Strided
        torch zip views come as views; to_torch makes their contiguous copies (with torch, so on a
        GPU too, where the engine makes none)."""
        return self._engine.load([e.index for e in entries], device=device, dtype=self._dtype, verify=verify,
                                 destinations=destinations, slot_size=self._slot_size, slot_count=self._slot_count,
                                 threads=self._threads, progress=self._progress, contiguous=False)

    def _wanted(self, filter_func, num_tensors):
        wanted = [e for e in self._entries if filter_func is None or filter_func(e.name)]
        return wanted if num_tensors < 0 else wanted[:num_tensors]

    def _loaded_dtype(self, entry: _Entry) -> str:
        return loaded_dtype(entry.dtype, self._dtype)

    def _fits(self, entry: _Entry, tensor) -> bool:
        return (tuple(tensor.shape) == entry.shape and _dtype_name(tensor.dtype) == self._loaded_dtype(entry)
                and tensor.is_contiguous() and tensor.device.type in ("cpu", "cuda"))

    def _load(self, entries, verify: bool) -> None:
        if not entries:
            return
        if self._device == "meta":
            import torch
            for entry in entries:
                self._cache[entry.index] = torch.empty(entry.shape, dtype=torch_dtype(self._loaded_dtype(entry)),
                                                       device="meta")
            return
        if self._group is not None:
            from ._distributed import DistributedLoad
            tensors, bytes_read = DistributedLoad(self, self._group).load(entries, verify)
            self._bytes_read += bytes_read
            for entry, tensor in zip(entries, tensors):
                self._cache[entry.index] = tensor
            return
        loaded = self._engine_load(entries, self._device, verify)
        self._bytes_read += loaded.bytes
        for k, entry in enumerate(entries):
            entry.module_index = loaded.module_index(k)
            self._cache[entry.index] = to_torch(loaded, k, self._loaded_dtype(entry), entry.shape)

    def _tensor(self, entry: _Entry):
        if entry.index not in self._cache:
            self._load([entry], self._verify_hash)
        return self._cache[entry.index]

    def _build_structure(self) -> dict:
        root: dict = {}
        for entry in self._entries:
            node = root
            for component in entry.path[:-1]:
                node = node.setdefault(component, {})
            node[entry.path[-1]] = entry
        return root

    def _proxy(self, branch: dict):
        return types.MappingProxyType({key: (self._tensor(value) if isinstance(value, _Entry) else self._proxy(value))
                                       for key, value in branch.items()})

    def _leaves(self, node) -> list:
        if isinstance(node, _Entry):
            return [node]
        return [leaf for value in node.values() for leaf in self._leaves(value)]

    def _materialize(self, node, chosen: set):
        if isinstance(node, _Entry):
            return self._cache[node.index]
        items = {key: self._materialize(value, chosen) for key, value in node.items()
                 if any(leaf.index in chosen for leaf in self._leaves(value))}
        if items and all(isinstance(key, int) for key in items):
            return [items[key] for key in sorted(items)]
        return items
