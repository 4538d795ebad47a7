"""ringload.transformers_reads: Hugging Face transformers' from_pretrained, with ringload doing the reads.

    import ringload.transformers_reads
    with ringload.transformers_reads.reading() as reads:
        model = AutoModelForCausalLM.from_pretrained("/models/llama", dtype=torch.bfloat16)
    reads.files, reads.tensors, reads.bytes   # what ringload read

transformers (5.x) has no hook for a custom weight reader: `transformers.modeling_utils` does
`from safetensors import safe_open` and, for every .safetensors file of the checkpoint, calls
`safe_open(file, framework="pt", device="cpu", backend="mmap")`, takes `get_slice(name)` of every
key and, on 4 worker threads, `slice[...]`, which with safetensors' mmap backend is a view of the
file's pages mapped copy-on-write (no copy); the parameters stay views of that mapping. (Also
`with safe_open(file, framework="pt") as f` for dtype="auto", reading only shapes and dtypes.)

reading() puts ringload behind that name (and behind the same name in
`transformers.modeling_layers`, which loads multi-token-prediction layers the same way) for the
time of the `with`, and puts safetensors' back after. Each file opened is one ringload.safe_open;
the first `slice[...]` of a whole tensor reads every tensor of the file in one engine load, the
others take theirs from it:

  placement="auto" (default): local safetensors files on the CPU that the page cache holds are
      left in the file's pages (ringload's "mapped" placement: mapped copy-on-write, paged in
      with MADV_POPULATE_READ, no copy, as transformers' own reads); anything else (a cold file,
      read with O_DIRECT, which was faster than faulting a mapping in; a URL, a GPU device, a tensor the file
      stores at an offset that is not a multiple of its element size) is read into memory of
      the load's own (the engine's "auto").
  placement="mapped" or "arena": that engine placement for every file (mapped is refused by
      the engine where it cannot apply: a URL, a GPU device).

prefetch=True (off by default: on 2 cores it made from_pretrained 1.74x transformers' own
where without it 1.09x, the opening thread slowing transformers' own Python; docs/benchmarks.md)
also wraps `transformers.modeling_utils._get_resolved_checkpoint_files`
(called by name in from_pretrained once the file list is known): each local file is opened and
mapped on one background thread (the engine releases the GIL) while transformers builds the
model and its conversion mapping; the first safe_open of the file takes it (one that reads only
shapes, as dtype="auto" does, hands it on). Unused ones are closed at the end of the `with`.

A partial slice (tensor parallelism's shards) is read on its own through ringload.safe_open's
get_slice, only its bytes. Other keyword arguments go to ringload.safe_open (verify_hash,
network options, ...). Not thread-safe across concurrent from_pretrained calls in other threads:
it patches module attributes for the time of the `with`.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from ..dropin.safe_open import safe_open as _ringload_safe_open
from ..errors import RingloadError, SafetensorError

# Where transformers imports safetensors' safe_open by name, to read checkpoints.
PATCHED_MODULES = ("transformers.modeling_utils", "transformers.modeling_layers")
_PLACEMENTS = ("auto", "mapped", "arena")


@dataclass
class Reads:
    """What ringload read inside one reading() (all files together)."""

    files: int = 0          # files opened through ringload
    tensors: int = 0        # tensors handed to transformers
    bytes: int = 0          # bytes the engine loads covered (ringload.safe_open.total_bytes_read)
    placements: list = field(default_factory=list)  # the engine placement each bulk load used
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _add(self, **counts) -> None:
        with self._lock:
            for name, value in counts.items():
                if name == "placements":
                    self.placements.append(value)
                else:
                    setattr(self, name, getattr(self, name) + value)


def _local_path(filename) -> bool:
    from ..ground.opening import local_path
    return local_path(filename) is not None


def _key_of(filename) -> str:
    from ..ground.opening import local_path
    return os.path.realpath(local_path(filename))


def _is_cpu(device) -> bool:
    return str(device) == "cpu"


class _Opened:
    """One ringload.safe_open of a file and, after its one bulk load, its tensors by name."""

    def __init__(self, reads: Reads, filename, framework, device, backend, placement: str, options: dict):
        self.reads = reads
        self._args = (filename, framework, device)
        self._backend, self._options = backend, options
        self._chosen = placement == "auto"  # the placement is ours to choose (and to change)
        if self._chosen and framework in ("pt", "torch"):  # torch tensors may be the file's pages
            from ..ground.opening import auto_placement
            placement = auto_placement(filename, device, "handed_over", options)
        self.placement = placement
        self.file = self._open(placement)
        self._tensors: Optional[dict] = None
        self._lock = threading.Lock()
        reads._add(files=1)

    def _open(self, placement: str):
        return _ringload_safe_open(*self._args, backend=self._backend, placement=placement, **self._options)

    def all(self) -> dict:
        """Every tensor of the file, read in one engine load the first time (under a lock:
        transformers asks from 4 threads at once)."""
        tensors = self._tensors
        if tensors is not None:
            return tensors
        with self._lock:
            if self._tensors is None:
                self._tensors = self._load_all()
            return self._tensors

    def _load_all(self) -> dict:
        """The engine's model-level call on this one file (load_files: ringload/model_load.hpp's
        load_model, as `ringload load` and diffusers' reads), torch tensors by name; the file's
        safe_open keeps its header for keys, metadata and partial slices."""
        if self._args[1] not in ("pt", "torch") or self._options.get("signature") is not None:
            # (A signed file's safe_open read and verified the whole file already: its tensors
            # come from that read rather than from a second one.)
            before = self.file.total_bytes_read
            tensors = self.file.get_tensors()
            self.reads._add(bytes=self.file.total_bytes_read - before, placements=self.placement)
            return tensors
        try:
            loaded = self._load_file(self.placement)
        except RingloadError as error:
            # The engine refuses the mapped placement where it cannot apply (a tensor at an
            # offset that is not a multiple of its element size): read into memory instead.
            if type(error) is not RingloadError or self.placement != "mapped" or not self._chosen:
                raise
            self.file.close()
            self.placement = "auto"
            self.file = self._open("auto")  # partial slices: through a file the engine can load
            loaded = self._load_file("auto")
        self.reads._add(bytes=loaded.bytes_read, placements=self.placement)
        return loaded.tensors

    def _load_file(self, placement: str):
        from ..dropin.model_load import load_files
        filename, _, device = self._args
        (loaded,) = load_files(filename, device=device, placement=placement, **self._options)
        return loaded

    def close(self) -> None:
        self.file.close()
        self._tensors = None  # the model's parameters keep what they use


class _Prefetch:
    """Files opened and loaded (mapped) on a background thread as soon as from_pretrained knows
    them, while it builds the model on the meta device: the first safe_open of each takes it."""

    def __init__(self, reads: Reads, placement: str, options: dict):
        self._reads, self._placement, self._options = reads, placement, options
        self._pending: dict = {}  # file key -> Future of _Opened
        self._lock = threading.Lock()
        self._pool: Optional[ThreadPoolExecutor] = None

    def start(self, files) -> None:
        if self._placement == "arena":
            return  # a copy of every file into memory ahead of need: not done behind the caller's back
        for filename in files or ():
            if not str(filename).endswith(".safetensors") or not _local_path(filename):
                continue
            key = _key_of(filename)
            with self._lock:
                if key in self._pending:
                    continue
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ringload-prefetch")
                self._pending[key] = self._pool.submit(self._load, filename)

    def _load(self, filename) -> _Opened:
        opened = _Opened(self._reads, filename, "pt", "cpu", None, self._placement, self._options)
        try:
            opened.all()
        except BaseException:
            opened.close()
            raise
        return opened

    def claim(self, filename, framework, device) -> Optional[_Opened]:
        if framework not in ("pt", "torch") or not _is_cpu(device) or not _local_path(filename):
            return None
        with self._lock:
            future = self._pending.pop(_key_of(filename), None)
        if future is None:
            return None
        try:
            return future.result()
        except Exception:  # noqa: BLE001 (opened again by the caller, where the error is raised)
            return None

    def give_back(self, filename, opened: _Opened) -> None:
        """An _Opened that handed out nothing (dtype="auto" reads only the shapes) waits for the next."""
        done: Future = Future()
        done.set_result(opened)
        with self._lock:
            if self._pool is not None and _key_of(filename) not in self._pending:
                self._pending[_key_of(filename)] = done
                return
        opened.close()

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            pending, self._pending = self._pending, {}
        if pool is not None:
            pool.shutdown(wait=True)
        for future in pending.values():
            if future.exception() is None:
                future.result().close()


class _File:
    """safetensors' safe_open as transformers uses it, reading through ringload: keys(),
    metadata(), get_slice(name) (shape and dtype before any read, [...] reads), get_tensor,
    get_tensors, offset_keys, and the context manager (transformers also calls __exit__
    without __enter__)."""

    def __init__(self, reads: Reads, prefetch: Optional[_Prefetch], placement: str, options: dict, filename,
                 framework="pt", device="cpu", *, backend: Optional[str] = None):
        self._reads, self._prefetch, self._filename = reads, prefetch, filename
        self._opened = prefetch.claim(filename, framework, device) if prefetch is not None else None
        self._from_prefetch = self._opened is not None
        if self._opened is None:
            self._opened = _Opened(reads, filename, framework, device, backend, placement, options)
        self._handed_any = False

    # --- safetensors' methods ---------------------------------------------------------------
    def keys(self) -> list:
        return self._file().keys()

    def offset_keys(self) -> list:
        return self._file().offset_keys()

    def metadata(self):
        return self._file().metadata()

    def get_slice(self, name: str) -> "_Slice":
        return _Slice(self, name, self._file().get_slice(name))

    def get_tensor(self, name: str):
        self._file().get_slice(name)  # safetensors' error for a missing name (nothing read)
        return self._handed(name)

    def get_tensors(self) -> dict:
        return {name: self._handed(name) for name in self._file().offset_keys()}

    def close(self) -> None:
        opened, self._opened = self._opened, None
        if opened is None:
            return
        if self._from_prefetch and not self._handed_any:
            self._prefetch.give_back(self._filename, opened)
        else:
            opened.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- inside -----------------------------------------------------------------------------
    def _file(self):
        if self._opened is None:
            raise SafetensorError("File is closed")
        return self._opened.file

    def _handed(self, name: str):
        self._file()
        self._handed_any = True
        tensor = self._opened.all()[name]
        self._reads._add(tensors=1)
        return tensor


class _Slice:
    """get_slice(name): get_shape(), get_dtype(), len(), and [...] (the whole tensor, from the
    file's one load) or any other index (that part only, read through ringload.safe_open)."""

    def __init__(self, owner: _File, name: str, inner):
        self._owner, self._name, self._inner = owner, name, inner

    def get_shape(self) -> list:
        return self._inner.get_shape()

    def get_dtype(self) -> str:
        return self._inner.get_dtype()

    def __len__(self) -> int:
        return len(self._inner)

    def __getitem__(self, index):
        if _whole(index, len(self._inner.get_shape())):
            return self._owner._handed(self._name)
        file = self._owner._file()
        before = file.total_bytes_read
        part = self._inner[index]
        self._owner._handed_any = True
        self._owner._reads._add(tensors=1, bytes=file.total_bytes_read - before)
        return part


def _whole(index, ndim: int) -> bool:
    """Whether tensor[index] is the whole tensor: ..., (...,), or full slices (:) only."""
    items = index if isinstance(index, tuple) else (index,)
    if any(item is not Ellipsis and not (isinstance(item, slice) and item == slice(None)) for item in items):
        return False
    return sum(1 for item in items if item is Ellipsis) <= 1 and (Ellipsis in items or len(items) == ndim)


@contextlib.contextmanager
def reading(placement: str = "auto", *, prefetch: bool = False, **options):
    """For the time of the `with`: transformers' from_pretrained (and anything else that calls
    safe_open through transformers.modeling_utils) reads safetensors files through ringload.
    Yields a Reads (files, tensors, bytes, placements) that counts what ringload read.

    placement: "auto" (mapped for local files on the CPU, else the engine's auto), "mapped"
        or "arena".
    prefetch: (default off) open and map each local checkpoint file on a background thread as soon as
        from_pretrained has resolved the file list (transformers.modeling_utils.
        _get_resolved_checkpoint_files), while it builds the model; not with "arena".
    options: ringload.safe_open's keyword arguments (verify_hash, network options)."""
    if placement not in _PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(_PLACEMENTS)}, not {placement!r}")
    reads = Reads()
    ahead = _Prefetch(reads, placement, options) if prefetch else None

    def opener(filename, framework="pt", device="cpu", *, backend=None):
        return _File(reads, ahead, placement, options, filename, framework, device, backend=backend)

    patched = []
    try:
        for name in PATCHED_MODULES:
            try:
                module = importlib.import_module(name)
            except ImportError:
                if name == PATCHED_MODULES[0]:
                    raise
                continue
            if hasattr(module, "safe_open"):
                patched.append((module, "safe_open", module.safe_open))
                module.safe_open = opener
        utils = importlib.import_module(PATCHED_MODULES[0])
        resolve = getattr(utils, "_get_resolved_checkpoint_files", None)
        if ahead is not None and callable(resolve):
            def resolved_then_prefetched(*args, **kwargs):
                result = resolve(*args, **kwargs)
                try:
                    files = result[0]
                    if isinstance(files, (list, tuple)):
                        ahead.start(files)
                except Exception:  # noqa: BLE001 (a shape of result this transformers does not have)
                    pass
                return result
            patched.append((utils, "_get_resolved_checkpoint_files", resolve))
            utils._get_resolved_checkpoint_files = resolved_then_prefetched
        yield reads
    finally:
        for module, attribute, original in reversed(patched):
            setattr(module, attribute, original)
        if ahead is not None:
            ahead.close()


__all__ = ["reading", "Reads", "PATCHED_MODULES"]
