"""TensorSerializer: writes a tensorizer file, as tensorizer's does (or, with format=, a
safetensors or torch.save zip file).

    with ringload.TensorSerializer("model.tensors", encryption=ringload.EncryptionParams.random()) as s:
        s.write_module(model)              # or write_state_dict(sd), write_tensor(...)

Tensors are gathered by reference and written by the engine in one pass at close() (CPU and
CUDA tensors alike: GPU tensors are copied device-to-host through the ring). Keep them
unchanged until close(); the file appears only then, complete.

Given a file object (an open file, io.BytesIO, any object with write()), the serializer writes
into it, from its position, at close(), and then closes it, as tensorizer does: the engine
writes a temporary file first, copied into the object.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Callable, Optional

from .. import _ringload
from ..ground.crypto import EncryptionParams, encryption_kwargs
from ..ground.progress import progress_callback

_TYPE_PARAM, _TYPE_BUFFER, _TYPE_STATE_DICT = 0, 1, 2


class TensorSerializer:
    """Collects tensors and writes them as one tensorizer file (a local path, s3:// or redis://
    URL, a file descriptor, or a file object written through).

    format="safetensors" or "torch" writes those instead (local paths; no encryption);
    metadata (str to str) and alignment (8 or 64) are safetensors'.

    progress: called as progress(bytes_done, bytes_total, tensors_done, tensors_total) while
    close() writes; an exception it raises stops the write (no file is left) and comes out of
    close(). progress_bar: a bar on stderr while close() writes (tqdm's where installed), as
    TensorDeserializer's: None (default) only where stderr is a terminal and RINGLOAD_PROGRESS
    does not say otherwise, and only for writes of 64 MiB or more; True always; False never."""

    def __init__(self, file_obj, compress_tensors: bool = False, *, encryption: Optional[EncryptionParams] = None,
                 format: str = "tensorizer", metadata: Optional[dict] = None, alignment: int = 8,
                 progress: Optional[Callable[[int, int, int, int], Any]] = None, progress_bar: Optional[bool] = None,
                 sign_key: Optional[str] = None, signature: Optional[str] = None, **unused):
        check_write_rows(format=format, sign_key=sign_key, signature=signature)
        _ringload.check_write_format(format, encryption is not None)  # an encrypted format: the registry's rule
        # The option table's settings (gcs_credentials, s3_endpoint, ...) for a remote target;
        # the rest of `unused` is tensorizer's arguments that ringload has no use for.
        opening = {row["name"] for row in _ringload.option_table() if row["target"] == "open"}
        self._network = {k: v for k, v in unused.items() if k in opening}
        self._format, self._alignment = format, alignment
        # OpenSSF Model Signing of the file, from the SHA-256 the write computes (signature:
        # where; default the file's path + ".sig"); a local path only.
        self._signing = {"sign_key": os.fspath(sign_key) if sign_key else "",
                         "signature": os.fspath(signature) if signature else ""}
        if sign_key and not isinstance(file_obj, (str, bytes, os.PathLike)):
            raise ValueError("sign_key: signing takes a path to write to (the signature goes beside the file), "
                             f"not a {type(file_obj).__name__}")
        self._metadata = [(str(k), str(v)) for k, v in (metadata or {}).items()]
        if compress_tensors:
            raise ValueError("compressed tensors are not supported (tensorizer deprecated them)")
        self._file = None  # a file object to write through, or None for a path or URL
        if isinstance(file_obj, (str, bytes, os.PathLike)):
            self._uri = os.fsdecode(file_obj)
        elif isinstance(file_obj, int):
            self._file = open(file_obj, "wb")  # closed at close(), as tensorizer closes it
        elif callable(getattr(file_obj, "write", None)):
            self._file = file_obj
        else:
            raise TypeError("TensorSerializer writes to a path or URL (str, bytes or os.PathLike), a file "
                            f"descriptor, or a file object with write(), not {type(file_obj).__name__}")
        encryption_kwargs(encryption)  # refuses what cannot be used now, not at close()
        self._encryption = encryption
        label = self._uri if self._file is None else str(getattr(file_obj, "name", "tensors"))
        self._progress = progress if progress is not None else progress_callback(progress_bar, label)
        self._rows: list[tuple] = []
        self._keep: list[Any] = []  # the tensors the rows point into, alive until written
        self._closed = False
        self.summary: Optional[dict] = None

    def write_tensor(self, idx: int, name, tensor_type, tensor) -> None:
        """One tensor: `name` a str (or a tuple path of str keys and int indexes), tensor_type
        0 (parameter), 1 (buffer) or 2 (state dict entry)."""
        import torch
        if self._closed:
            raise ValueError("this serializer is closed")
        path = [name] if isinstance(name, (str, int)) else list(name)
        tensor_type = int(getattr(tensor_type, "value", tensor_type))
        tensor = tensor.detach()
        is_meta = tensor.device.type == "meta"
        if not is_meta:
            tensor = tensor.contiguous()
            if tensor.device.type not in ("cpu", "cuda"):
                tensor = tensor.cpu()
        dtype = str(tensor.dtype).replace("torch.", "")
        device = tensor.device.index if tensor.device.type == "cuda" else -1
        if device is None:
            device = torch.cuda.current_device()
        address = 0 if is_meta else tensor.data_ptr()
        nbytes = tensor.numel() * tensor.element_size()
        self._rows.append((path, dtype, list(tensor.shape), address, 0 if is_meta else nbytes, device, is_meta,
                           int(idx), tensor_type))
        self._keep.append(tensor)

    def write_state_dict(self, state_dict) -> None:
        """A state dict, possibly nested (dicts and lists of tensors)."""
        def walk(prefix: tuple, value):
            if isinstance(value, dict) or hasattr(value, "items"):
                for key, item in value.items():
                    walk(prefix + (key,), item)
            elif isinstance(value, (list, tuple)):
                for index, item in enumerate(value):
                    walk(prefix + (index,), item)
            else:
                self.write_tensor(0, prefix, _TYPE_STATE_DICT, value)
        walk((), state_dict)

    def write_module(self, m, remove_tensors: bool = False, *, include_non_persistent_buffers: bool = True) -> None:
        """Every module's own parameters and buffers, named "<module path>.<name>" (the root's
        as ".<name>"), with the module's position as module_idx, as tensorizer writes them."""
        if remove_tensors:
            raise ValueError("remove_tensors is not supported: tensors are written at close()")
        for idx, (module_name, module) in enumerate(m.named_modules()):
            skip = set() if include_non_persistent_buffers else set(getattr(module, "_non_persistent_buffers_set", ()))
            for name, tensor in module.named_parameters(recurse=False):
                self.write_tensor(idx, f"{module_name}.{name}", _TYPE_PARAM, tensor)
            for name, tensor in module.named_buffers(recurse=False):
                if name not in skip:
                    self.write_tensor(idx, f"{module_name}.{name}", _TYPE_BUFFER, tensor)

    def close(self) -> None:
        """Writes the file (GIL released); it appears under its name only when complete. A file
        object given instead is written into and closed."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._file is None:
                self.summary = self._write(self._uri)
            else:
                with tempfile.TemporaryDirectory(prefix="ringload-write-") as folder:
                    path = os.path.join(folder, "tensors")
                    self.summary = self._write(path)
                    _copy_into(path, self._file)
                self._file.close()
        finally:
            self._rows, self._keep = [], []

    def _write(self, uri: str) -> dict:
        return _ringload.write_tensorizer(uri, self._rows, format=self._format, metadata=self._metadata,
                                          alignment=self._alignment, progress=self._progress, **self._signing,
                                          **encryption_kwargs(self._encryption), **self._network)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc_info):
        if exc_type is None:
            self.close()
        else:
            self._closed = True  # nothing is written after a failure


def _copy_into(path: str, file_obj) -> None:
    """The file at `path` into `file_obj` from its position: in the kernel where it is a file."""
    with open(path, "rb") as source:
        try:
            target_fd = file_obj.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            target_fd = None
        if target_fd is not None:
            file_obj.flush()
            position = file_obj.tell()
            size = os.fstat(source.fileno()).st_size
            os.lseek(target_fd, position, os.SEEK_SET)
            copied = 0
            while copied < size:
                sent = os.sendfile(target_fd, source.fileno(), copied, size - copied)
                if sent == 0:
                    raise OSError(f"could not write into {getattr(file_obj, 'name', 'the file object')}")
                copied += sent
            file_obj.seek(position + size)
        else:
            shutil.copyfileobj(source, file_obj, 8 << 20)


def check_write_rows(**given) -> None:
    """The keywords of a write that are rows of the option table's write side (README's "Write
    options", `ringload convert`'s flags: format, verify_hash, memory_budget, sign_key,
    signature), checked with the words the CLI uses for them; None is "not given"."""
    for name, value in given.items():
        if value is not None:
            _ringload.check_write_option(name, value, "python")


def write_file(tensors: dict, filename, *, format: str, metadata: Optional[dict] = None, alignment: int = 8,
               progress_bar: Optional[bool] = None, sign_key: Optional[str] = None,
               signature: Optional[str] = None) -> None:
    """A dict of name to tensor (nested dicts and lists allowed) as one file of `format`."""
    with TensorSerializer(filename, format=format, metadata=metadata, alignment=alignment,
                          progress_bar=progress_bar, sign_key=sign_key, signature=signature) as serializer:
        serializer.write_state_dict(tensors)
