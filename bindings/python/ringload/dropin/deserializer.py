"""TensorDeserializer: a read-only Mapping of a file's tensors, as tensorizer's.

Reads tensorizer, safetensors and torch.save zip files (told apart by their first bytes).

    with ringload.TensorDeserializer("model.tensors", device="cuda", verify_hash=True) as d:
        model.load_state_dict(d)            # or: d.load_into_module(model) (no second copy)

The engine loads every wanted tensor in one pass (GIL released) into one host arena or one
device allocation; tensors are zero-copy views that keep it alive. lazy_load=True loads each
tensor on first access instead. device="meta" reads no data at all.

A file object without a path (io.BytesIO, tensorizer's CURLStreamFile or RedisStreamFile, a
pipe) is read from its position to its end into an anonymous in-memory file (memfd), which the
engine reads until close(). Where the object tells its size, no read asks for more than remains
(CURLStreamFile refuses one that does).
"""
from __future__ import annotations

import collections.abc
import types
from typing import Any, Callable, Iterator, Optional

from .. import _ringload
from ..ground.crypto import DecryptionParams, secret_kwargs
from ..ground.progress import progress_callback
from ..ground.slices import drop_dims, load_slices, normalize_index
from ..ground.opening import open_engine
from ..ground.file_objects import source_of
from ..ground.file_reads import Entry, FileReads
from ..ground.tensors import dtype_name, to_numpy, to_torch, torch_dtype

FilterFunc = Callable[[str], bool]
_TYPE_PARAM, _TYPE_BUFFER, _TYPE_STATE_DICT = 0, 1, 2
_FEATURE_ENCRYPTED = 1  # tensorizer's _FileFeatureFlags.encrypted


def _default_device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _device_text(device) -> str:
    text = str(device)
    return "cuda:0" if text == "cuda" else text




class TensorDeserializer(collections.abc.Mapping):
    """A tensorizer file or URL (http(s)://, s3://, redis://) as a Mapping of names to tensors.

    Args:
        file_obj: a path, a URL, a file descriptor, an open file (read by its path), or a
            file object without a path (read into memory first).
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
            is read once per group (ringload/ground/distributed.py). Every rank gets every tensor;
            with lazy_load, every rank must access the tensors in the same order.
        signature, public_key, certificate_chain, model_folder: a signed model's signature
            (OpenSSF Model Signing) and whom to trust: the file is read whole and checked
            against the signed statement while it loads; a file that differs raises
            HashMismatchError naming it before any tensor is handed out (ringload/ground/signing.py).
            With lazy_load the first access loads every tensor (the file is read once).
    """

    def __init__(self, file_obj, device=None, filter_func: Optional[FilterFunc] = None, dtype=None, *,
                 lazy_load: bool = False, plaid_mode: Optional[bool] = None, num_readers: Optional[int] = None,
                 verify_hash: Optional[bool] = None, encryption: Optional[DecryptionParams] = None,
                 ring_bytes: int = 0, slot_size: int = 0, threads: int = 0,
                 progress: Optional[Callable[[int, int, int, int], Any]] = None, progress_bar: Optional[bool] = None,
                 read_mode: str = "auto",
                 placement: str = "auto", process_group=None, **network):
        del plaid_mode, num_readers  # tensorizer's knobs; the engine needs neither
        device = _device_text(device if device is not None else _default_device())
        dtype = dtype_name(dtype)
        # The option table's rows, checked with the words of the CLI and the server loaders.
        for name, value in (("device", device if device != "meta" else None), ("dtype", dtype),
                            ("ring_bytes", ring_bytes), ("slot_size", slot_size),
                            ("threads", threads)):
            if value is not None:
                _ringload.check_option(name, value, "python")
        self._verify_hash = bool(verify_hash)
        self._secret = secret_kwargs(encryption)  # to_redis re-encrypts with it
        uri, self._spooled = source_of(file_obj)
        try:
            engine = open_engine(uri, read_mode=read_mode, placement=placement, **self._secret, **network)
        except BaseException:
            self._close_spooled()
            raise
        entries = [Entry.from_tuple(row) for row in engine.tensor_rows()]
        self.reads = FileReads(  # how every read of the file is made (ringload/ground/file_reads.py)
            engine=engine, uri=uri, device=device, dtype=dtype,
            entries=[e for e in entries if filter_func is None or filter_func(e.name)], slot_size=slot_size,
            slot_count=_ringload.slots_for_ring(ring_bytes, slot_size) if ring_bytes else 0, threads=threads,
            progress=progress if progress is not None else progress_callback(progress_bar, uri),
            signed=network.get("signature") is not None, group=process_group)
        self._by_path = {e.path: e for e in self.reads.entries}
        self._structure = self._build_structure()
        self._cache: dict[int, Any] = {}
        self._bytes_read = 0
        if not lazy_load:
            self._load(self.reads.entries, self._verify_hash)

    @property
    def _device(self) -> str:
        """tensorizer's TensorDeserializer._device (its own tests read it)."""
        return self.reads.device

    # --- Mapping -------------------------------------------------------------------------
    def __getitem__(self, key):
        branch = self._structure[key]
        if isinstance(branch, Entry):
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
        wanted = self._wanted(filter_func, num_tensors)
        missing = [e for e in wanted if e.index not in self._cache]
        if self.reads.device == "meta":
            self._load(missing, False)
            missing = []
        for entry in wanted:
            if entry.index in self._cache:
                yield entry.module_index, entry.tensor_type, entry.name, self._cache[entry.index]
        for entry, tensor in self._stream_entries(missing, self._verify(verify_hash)):
            self._cache[entry.index] = tensor
            self._bytes_read += entry.byte_length
            yield entry.module_index, entry.tensor_type, entry.name, tensor

    def read_numpy_arrays(self, filter_func: Optional[FilterFunc] = None, num_tensors: int = -1,
                          allow_raw_data: bool = False, verify_hash: Optional[bool] = None):
        """Yields (module_idx, tensor_type, name, array, is_opaque, torch_dtype) in file order,
        loaded to host memory; works without torch. A dtype numpy lacks (bfloat16, ...) is
        "opaque": its bytes as void items, allowed only with allow_raw_data=True."""
        if self.reads.device != "cpu":
            raise RuntimeError("read_numpy_arrays is only valid when deserializing to the CPU")
        wanted = self._wanted(filter_func, num_tensors)
        loaded = self.reads.load(wanted, "cpu", self._verify(verify_hash))
        for k, entry in enumerate(wanted):
            entry.module_index = loaded.module_index(k)
            dtype = self.reads.loaded_dtype(entry)
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
        by_name = {e.name: e for e in self.reads.entries}
        requests, cuts = [], []
        for name, key in slices.items():
            entry = by_name.get(name)
            if entry is None:
                raise KeyError(name)
            ranges, dropped = normalize_index(key, entry.shape)
            requests.append((entry, ranges))
            cuts.append((ranges, dropped))
        tensors, bytes_read = load_slices(self.reads.engine, None, requests, self.reads.device,
                                          self._verify(verify_hash), self.reads.dtype)
        self._bytes_read += bytes_read
        return {name: drop_dims(tensor, *cut) for name, tensor, cut in zip(slices, tensors, cuts)}

    def stream(self) -> Iterator[tuple]:
        """Yields (name, tensor) for every wanted tensor as it lands (ringload.stream_tensors'
        order), without keeping it: the caller holds what it keeps."""
        if self.reads.device == "meta":
            yield from self.flat_tensors().items()
            return
        for entry, tensor in self._stream_entries(self.reads.entries, self._verify_hash):
            yield entry.name, tensor

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
                self.reads.load([e for e, _ in pairs], device, verify, [t.data_ptr() for _, t in pairs])
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
        self._load([e for e in self.reads.entries if e.index not in self._cache], self._verify_hash)
        return {e.name: self._tensor(e) for e in self.reads.entries}

    @property
    def total_tensor_bytes(self) -> int:
        """Bytes of tensor data stored in the file for the tensors in the mapping (meta: none)."""
        return sum(e.data_length for e in self.reads.entries)

    @property
    def total_bytes_read(self) -> int:
        return self._bytes_read

    def verify_module(self, m) -> tuple:
        """Whether `m` holds what the file does, as tensorizer's verify_module: (passed,
        [(name, passed), ...]) for each tensor of the mapping, by the name write_module gave it
        (state_dict() names, and non-persistent buffers). A tensor passes when `m` has one of that
        name with the same dtype, shape and bytes as the file's, read with its hashes checked."""
        theirs = dict(m.state_dict())
        theirs.update(m.named_buffers())
        self._load([e for e in self.reads.entries if e.index not in self._cache and e.name in theirs], True)
        results = []
        for entry in self.reads.entries:
            tensor = theirs.get(entry.name)
            results.append((entry.name, tensor is not None and _same_tensor(self._cache[entry.index], tensor)))
        return all(passed for _, passed in results), results

    def to_redis(self, redis_client, key_prefix: str, force: bool = False) -> None:
        """Publishes the whole file (every tensor, whatever filter_func chose) to Redis under
        `key_prefix`, in tensorizer's layout, so that redis://host:port/<key_prefix> reads it
        (with ringload or tensorizer). `redis_client` is a redis-py client (its host, port, db and
        password are used). An encrypted file stays encrypted, with this deserializer's key or
        passphrase. force=False (tensorizer's default) leaves a model already there as it is."""
        target = _redis_uri(redis_client, key_prefix)
        if not force and redis_client.exists(f"{key_prefix}:header:0"):
            return
        self.reads.engine.convert_to(target, "tensorizer", self._verify_hash, **self._secret)

    @property
    def _file_header(self) -> types.SimpleNamespace:
        """tensorizer's private _file_header, for code that reads it: version_number (the
        tensorizer data version; 0 for other formats), tensor_count, tensor_size."""
        return types.SimpleNamespace(version_number=self.reads.engine.data_version,
                                     tensor_count=len(self.reads.entries), tensor_size=self.total_tensor_bytes)

    @property
    def _file_flags(self) -> frozenset:
        """tensorizer's private _file_flags, for code that reads it: the values of tensorizer's
        _FileFeatureFlags the file has (`_FileFeatureFlags.encrypted in d._file_flags`)."""
        return frozenset({_FEATURE_ENCRYPTED} if self.reads.engine.encrypted else ())

    def close(self) -> None:
        """Lets the file go; tensors already handed out stay valid."""
        self.reads.engine.close()
        self._close_spooled()

    def _close_spooled(self) -> None:
        if self._spooled is not None:
            self._spooled.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- inside ----------------------------------------------------------------------------
    def _verify(self, verify_hash: Optional[bool]) -> bool:
        return self._verify_hash if verify_hash is None else bool(verify_hash)

    def _stream_entries(self, entries, verify: bool) -> Iterator[tuple]:
        """(entry, tensor) for each of `entries`, as the engine hands it over."""
        if not entries:
            return
        if self.reads.group is not None:  # read once per group: each round's tensors as it lands
            from ..ground.distributed import DistributedLoad
            for k, tensor in DistributedLoad(self.reads).stream(entries, verify):
                yield entries[k], tensor
            return
        native = self.reads.engine.stream([e.index for e in entries], device=self.reads.device, dtype=self.reads.dtype,
                                          verify=verify, contiguous=False, **self.reads.ring())
        try:
            while True:
                handed = native.next()
                if handed is None:
                    return
                k, item = handed
                entry = entries[k]
                entry.module_index = item.module_index(0)
                yield entry, to_torch(item, 0, self.reads.loaded_dtype(entry), entry.shape)
        finally:
            native.close()  # cancels a load still running and joins its thread

    def _wanted(self, filter_func, num_tensors):
        wanted = [e for e in self.reads.entries if filter_func is None or filter_func(e.name)]
        return wanted if num_tensors < 0 else wanted[:num_tensors]

    def _fits(self, entry: Entry, tensor) -> bool:
        return (tuple(tensor.shape) == entry.shape and dtype_name(tensor.dtype) == self.reads.loaded_dtype(entry)
                and tensor.is_contiguous() and tensor.device.type in ("cpu", "cuda"))

    def _load(self, entries, verify: bool) -> None:
        if not entries:
            return
        if self.reads.device == "meta":
            import torch
            for entry in entries:
                self._cache[entry.index] = torch.empty(entry.shape, dtype=torch_dtype(self.reads.loaded_dtype(entry)),
                                                       device="meta")
            return
        if self.reads.group is not None:
            from ..ground.distributed import DistributedLoad
            tensors, bytes_read = DistributedLoad(self.reads).load(entries, verify)
            self._bytes_read += bytes_read
            for entry, tensor in zip(entries, tensors):
                self._cache[entry.index] = tensor
            return
        loaded = self.reads.load(entries, self.reads.device, verify)
        self._bytes_read += loaded.bytes
        for k, entry in enumerate(entries):
            entry.module_index = loaded.module_index(k)
            self._cache[entry.index] = to_torch(loaded, k, self.reads.loaded_dtype(entry), entry.shape)

    def _tensor(self, entry: Entry):
        if entry.index not in self._cache:
            # A signed file is hashed whole by each load: the first access loads every tensor,
            # so that the file is read (and verified) once.
            self._load(self.reads.entries if self.reads.signed else [entry], self._verify_hash)
        return self._cache[entry.index]

    def _build_structure(self) -> dict:
        root: dict = {}
        for entry in self.reads.entries:
            node = root
            for component in entry.path[:-1]:
                node = node.setdefault(component, {})
            node[entry.path[-1]] = entry
        return root

    def _proxy(self, branch: dict):
        return types.MappingProxyType({key: (self._tensor(value) if isinstance(value, Entry) else self._proxy(value))
                                       for key, value in branch.items()})

    def _leaves(self, node) -> list:
        if isinstance(node, Entry):
            return [node]
        return [leaf for value in node.values() for leaf in self._leaves(value)]

    def _materialize(self, node, chosen: set):
        if isinstance(node, Entry):
            return self._cache[node.index]
        items = {key: self._materialize(value, chosen) for key, value in node.items()
                 if any(leaf.index in chosen for leaf in self._leaves(value))}
        if items and all(isinstance(key, int) for key in items):
            return [items[key] for key in sorted(items)]
        return items


def _same_tensor(stored, tensor) -> bool:
    """Same dtype, shape and bytes (NaNs compared as bits); meta tensors by dtype and shape."""
    if stored.dtype != tensor.dtype or stored.shape != tensor.shape:
        return False
    if stored.device.type == "meta" or tensor.device.type == "meta":
        return stored.device.type == tensor.device.type
    import torch
    as_bytes = [t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8) for t in (stored, tensor)]
    return bool(torch.equal(*as_bytes))


def _redis_uri(redis_client, key_prefix: str) -> str:
    """redis://[user:password@]host:port/<key_prefix> of a redis-py client's connection."""
    from urllib.parse import quote
    kwargs = redis_client.connection_pool.connection_kwargs
    if "path" in kwargs:
        raise ValueError("to_redis needs a Redis client over TCP (host and port), not a Unix socket")
    if int(kwargs.get("db") or 0) != 0:
        raise ValueError("ringload reads and writes Redis database 0 only (redis://host:port/prefix)")
    user, password = kwargs.get("username"), kwargs.get("password")
    auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{key_prefix}"

