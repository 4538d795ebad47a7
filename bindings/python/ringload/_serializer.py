"""TensorSerializer: writes a tensorizer file, as tensorizer's does (or, with format=, a
safetensors or torch.save zip file).

    with ringload.TensorSerializer("model.tensors", encryption=ringload.EncryptionParams.random()) as s:
        s.write_module(model)              # or write_state_dict(sd), write_tensor(...)

Tensors are gathered by reference and written by the engine in one pass at close() (CPU and
CUDA tensors alike: GPU tensors are copied device-to-host through the ring). Keep them
unchanged until close(); the file appears only then, complete.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from . import _ringload
from ._crypto import EncryptionParams, encryption_kwargs

_TYPE_PARAM, _TYPE_BUFFER, _TYPE_STATE_DICT = 0, 1, 2


class TensorSerializer:
    """Collects tensors and writes them as one tensorizer file (local path, s3:// or redis://).

    format="safetensors" or "torch" writes those instead (local paths; no encryption);
    metadata (str to str) and alignment (8 or 64) are safetensors'."""

    def __init__(self, file_obj, compress_tensors: bool = False, *, encryption: Optional[EncryptionParams] = None,
                 format: str = "tensorizer", metadata: Optional[dict] = None, alignment: int = 8, **unused):
        _ringload.check_write_format(format, encryption is not None)  # the registry's formats, with its message
        self._format, self._alignment = format, alignment
        self._metadata = [(str(k), str(v)) for k, v in (metadata or {}).items()]
        if compress_tensors:
            raise ValueError("compressed tensors are not supported (tensorizer deprecated them)")
        if isinstance(file_obj, (str, os.PathLike)):
            self._uri = os.fspath(file_obj)
        elif isinstance(getattr(file_obj, "name", None), str):
            self._uri = file_obj.name
        else:
            raise TypeError("ringload writes to paths and URLs (str or os.PathLike), or open files with a .name")
        self._encryption = encryption
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
        path = [name] if isinstance(name, str) else list(name)
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
                self.write_tensor(0, prefix[0] if len(prefix) == 1 else prefix, _TYPE_STATE_DICT, value)
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
        """Writes the file (GIL released); it appears under its name only when complete."""
        if self._closed:
            return
        self._closed = True
        try:
            self.summary = _ringload.write_tensorizer(self._uri, self._rows, format=self._format,
                                                      metadata=self._metadata, alignment=self._alignment,
                                                      **encryption_kwargs(self._encryption))
        finally:
            self._rows, self._keep = [], []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc_info):
        if exc_type is None:
            self.close()
        else:
            self._closed = True  # nothing is written after a failure


def write_file(tensors: dict, filename, *, format: str, metadata: Optional[dict] = None, alignment: int = 8) -> None:
    """A dict of name to tensor (nested dicts and lists allowed) as one file of `format`."""
    with TensorSerializer(filename, format=format, metadata=metadata, alignment=alignment) as serializer:
        serializer.write_state_dict(tensors)
