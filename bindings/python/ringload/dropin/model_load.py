"""ringload.load_folder: a whole model through the engine's model-level call
(ringload/model_load.hpp's load_model), as `ringload load DIR` loads it:

    tensors = ringload.load_folder("/models/llama")                      # {name: tensor}
    tensors = ringload.load_folder("/models/llama", signature="/models/llama.sig", public_key="pub.pem")

The weight files are the ones vLLM would read (find_weight_files: *.safetensors and their
index, *.tensors, *.bin and their index, *.pt), read side by side; with signature= every file is
verified in its own read and the folder's other files are hashed after; the first failure is
raised, naming its file. Keyword arguments are the option table's Python rows (device, dtype,
verify_hash, threads, placement, the network and signature words, ...), checked with its words.

    for name, tensor in ringload.stream_folder("/models/llama", device="cuda:0"):   # as they land
        model.load_weights([(name, tensor)])

ringload.stream_folder is the same call streamed (ModelLoadOptions::on_tensor): every tensor of
every file handed over as it lands, the files read side by side.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterator, List, Tuple

from .. import _ringload
from ..ground.crypto import secret_kwargs
from ..ground.file_reads import Entry
from ..ground.tensors import dtype_name, to_torch


@dataclass
class FileLoad:
    """One file of a model-level load: its tensors by name and what the engine read for them."""

    path: str
    tensors: Dict[str, object]
    bytes_read: int
    how: str  # the engine's placement and read path, as LoadedModel::how says it


def load_files(model, *, encryption=None, **options) -> List[FileLoad]:
    """The engine's model-level call (ringload/model_load.hpp's load_model) file by file: `model`
    a folder (its weight files), one file, or a list of files or URLs; each file's tensors as
    load_file names them. Keyword arguments as load_folder's."""
    if options.get("device") is not None:
        options["device"] = _ringload.device_text(options["device"])
    if options.get("dtype") is not None:
        options["dtype"] = dtype_name(options["dtype"])
    files = []
    for path, loaded in _ringload.load_model(_model_given(model), **secret_kwargs(encryption), **options):
        tensors = dict(_named_tensor(loaded, k, loaded.row(k)) for k in range(len(loaded)))
        files.append(FileLoad(path, tensors, loaded.bytes_read, loaded.how))
    return files


def load_folder(model, *, encryption=None, **options) -> Dict[str, object]:
    """Every tensor of `model` (a folder, or one file, or a list of files or URLs) by name, over
    all its weight files; a name in two files raises ValueError naming both. encryption: the
    DecryptionParams of encrypted tensorizer files."""
    tensors, found_in = {}, {}
    for file in load_files(model, encryption=encryption, **options):
        for name, tensor in file.tensors.items():
            if name in tensors:
                raise ValueError(f"ringload: tensor {name!r} is in {found_in[name]} and in {file.path}")
            tensors[name], found_in[name] = tensor, file.path
    return tensors


def stream_folder(model, device="cpu", dtype=None, *, encryption=None, **options) -> Iterator[Tuple[str, object]]:
    """(name, tensor) for every tensor of `model` as it lands: the engine's model-level call
    (ringload/model_load.hpp's load_model) streamed, its files read side by side.

    Args:
        model: a folder (its weight files, as load_folder finds them; with signature= each file
            is verified in its own read before any of its tensors is handed over), one file,
            or a list of files or URLs, in order (with signature=: local files, their folder
            (model_folder=, else the first file's) checked whole, as a folder is).
        device, dtype: where the tensors go and what floating tensors become on the way.
        encryption: the DecryptionParams of encrypted tensorizer files.
        options: the option table's Python rows (verify_hash, threads, ring_bytes, placement,
            the network and signature words, ...), checked with its words.

    Tensors come in the order they complete across the files; each keeps its file's memory
    alive. The loads wait for a slow consumer once 1 GiB of tensors handed over are not taken
    yet (the files read side by side would otherwise hold the whole model, on a GPU in device
    memory). Leaving the loop early (break, an exception, close()) cancels every file's load.
    """
    stream = _ringload.stream_model(_model_given(model), **secret_kwargs(encryption),
                                    device=_ringload.device_text(device), dtype=dtype_name(dtype), **options)
    return _handed_over(stream)


def _model_given(model):
    """A folder or a file as a path, a list of files or URLs as a list of them."""
    if isinstance(model, (list, tuple)):
        return [os.fspath(each) for each in model]
    return os.fspath(model)


def _handed_over(stream) -> Iterator[Tuple[str, object]]:
    try:
        while True:
            got = stream.next()
            if got is None:
                return
            _, row, item = got
            yield _named_tensor(item, 0, row)
    finally:
        stream.close()


def _named_tensor(loaded, k: int, row: tuple) -> Tuple[str, object]:
    """(name, tensor) of tensor k of a load (a Loaded, or a streamed item's only tensor) from its
    index row as loaded: its name as every entry point gives it, its dtype after dtype= (torch
    takes it through to_torch)."""
    entry = Entry.from_tuple(row)
    return entry.name, to_torch(loaded, k, entry.dtype, entry.shape)
