"""load_file / save_file and the rest of safetensors.torch's API, for every format ringload reads.

    tensors = ringload.load_file("model.safetensors", device="cuda:0")   # or .pt, .tensors, a URL
    ringload.save_file(tensors, "model.safetensors", metadata={"format": "pt"})
    data = ringload.save(tensors); tensors = ringload.load(data)         # bytes
    ringload.save_model(model, "model.safetensors"); ringload.load_model(model, "model.safetensors")
    ringload.convert("model.pt", "model.safetensors")                    # streamed, any to any

The format is found from the file's first bytes, never from its name. Tensors of one load
share one host arena (or device allocation); torch zip tensors that shared a storage when
saved share its memory here too. Writing safetensors refuses what safetensors refuses, with
its exception types and words (shared or non-contiguous tensors, metadata that is not str).
"""
from __future__ import annotations

import os
import tempfile
from typing import Optional

from .. import _ringload
from ..ground.crypto import encryption_kwargs, secret_kwargs
from .deserializer import TensorDeserializer
from ..ground.file_objects import uri_of
from ..ground.opening import check_exists, open_engine
from .shared import remove_duplicate_names, check_for_save, check_metadata

_BACKENDS = ("mmap", "pread")  # safetensors' ways to read; the engine has its own, either is accepted


def _device_of(device) -> str:
    return _ringload.device_text(device)


def load_file(filename, device="cpu", dtype=None, *, backend: Optional[str] = None, **options) -> dict:
    """A flat dict of name to torch tensor (nested names joined with '.').

    Args:
        filename: a path or URL (http(s)://, s3://, redis://) of a tensorizer, safetensors or
            torch.save zip file.
        device: "cpu", "cuda", "cuda:N" (or an int N, or a torch.device, as safetensors takes it).
        dtype: floating tensors become this dtype on the way.
        backend: safetensors' "mmap" or "pread", accepted for compatibility (the engine reads).
        options: the TensorDeserializer's keyword arguments (encryption, verify_hash, ...).
    """
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(_BACKENDS)}, not {backend!r}")
    uri = uri_of(filename)
    check_exists(uri)
    with TensorDeserializer(filename, device=_device_of(device), dtype=dtype, **options) as deserializer:
        return deserializer.flat_tensors()


def save_file(tensors: dict, filename, metadata: Optional[dict] = None, *, format: str = "safetensors",
              alignment: int = 8, progress_bar: Optional[bool] = None, sign_key: Optional[str] = None,
              signature: Optional[str] = None) -> None:
    """Writes a dict of name to tensor as safetensors (default), torch or tensorizer.

    The file appears under its name only once complete. metadata (str to str) is safetensors'
    __metadata__; alignment 8 or 64 is where safetensors' data starts. As safetensors, it
    refuses (for format="safetensors") tensors that share memory (RuntimeError: use
    save_model), non-contiguous or sparse ones (ValueError), metadata values that are not str
    (TypeError). torch and tensorizer also take nested dicts and lists. progress_bar: a bar on
    stderr while it writes, as TensorSerializer's (None: only where stderr is a terminal).
    sign_key: a PEM ECDSA private key: the file is signed (OpenSSF Model Signing, the key
    method) from the SHA-256 computed while writing, into `signature` (default filename + ".sig").
    """
    from .serializer import write_file
    if format == "safetensors":
        check_for_save(tensors)
        check_metadata(metadata)
    write_file(tensors, filename, format=format, metadata=metadata, alignment=alignment, progress_bar=progress_bar,
               sign_key=sign_key, signature=signature)


def save(tensors: dict, metadata: Optional[dict] = None) -> bytes:
    """The safetensors file of `tensors` as bytes (the same bytes save_file writes)."""
    check_for_save(tensors)
    check_metadata(metadata)
    with tempfile.TemporaryDirectory(prefix="ringload-save-") as folder:
        path = os.path.join(folder, "tensors.safetensors")
        save_file(tensors, path, metadata=metadata)
        with open(path, "rb") as file:
            return file.read()


def load(data: bytes) -> dict:
    """The tensors (on the CPU) of a safetensors file given as bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load takes the bytes of a safetensors file, not {type(data).__name__}")
    with tempfile.TemporaryDirectory(prefix="ringload-load-") as folder:
        path = os.path.join(folder, "data.safetensors")
        with open(path, "wb") as file:
            file.write(data)
        try:
            return load_file(path)
        except Exception as error:  # the message names our temporary file: name the bytes instead
            raise type(error)(str(error).replace(path, "<bytes>")) from None


def save_model(model, filename, metadata: Optional[dict] = None, force_contiguous: bool = True) -> None:
    """Saves model.state_dict() as safetensors, keeping one name per shared storage (tied
    weights): the others are recorded in the metadata (dropped name -> kept name), as
    safetensors' save_model does."""
    state_dict = model.state_dict()
    for kept_name, dropped in remove_duplicate_names(state_dict).items():
        for name in dropped:
            if metadata is None:
                metadata = {}
            if name not in metadata:
                metadata[name] = kept_name
            del state_dict[name]
    if force_contiguous:
        state_dict = {name: tensor.contiguous() for name, tensor in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as error:
        raise ValueError(str(error) + " Or use save_model(..., force_contiguous=True), read the docs for potential "
                         "caveats.") from None


def load_model(model, filename, strict: bool = True, device="cpu", *, backend: Optional[str] = None):
    """Loads a file into `model` (tied weights filled once, through the name on file);
    returns (missing, unexpected) names, raising RuntimeError for either when strict."""
    state_dict = load_file(filename, device=device, backend=backend)
    to_removes = remove_duplicate_names(model.state_dict(), preferred_names=list(state_dict.keys()))
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for dropped in to_removes.values():
        for name in dropped:
            if name not in missing:
                unexpected.append(name)
            else:
                missing.remove(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected


def convert(source, target, *, format: Optional[str] = None, decryption=None, encryption=None,
            verify_hash: bool = True, memory_budget: int = 1 << 30, sign_key: Optional[str] = None,
            signature: Optional[str] = None, **network) -> dict:
    """Rewrites `source` as `target`, streamed: never the whole model in memory.

    Args:
        source: a path or URL of a tensorizer, safetensors or torch.save zip file.
        target: a local path (or, for tensorizer, an s3:// / redis:// URL).
        The keywords below but decryption and encryption are the write's rows of the option table
        (README's "Write options", the flags of `ringload convert`), checked with their words.
        format: "tensorizer", "safetensors" or "torch"; None: from target's extension
            (.safetensors; .pt, .pth, .bin; else tensorizer).
        decryption: DecryptionParams of an encrypted tensorizer source.
        encryption: EncryptionParams for a tensorizer target.
        verify_hash: check a tensorizer source's stored hashes on the way.
        memory_budget: tensor bytes held in memory at once (one larger tensor is held whole).
        network: the network options TensorDeserializer takes for a URL source.
        sign_key, signature: sign the target (OpenSSF Model Signing, the key method) from the
            SHA-256 its write computes, into `signature` (default target + ".sig").
    Returns:
        What was done: format, tensors, bytes_read, peak_held_bytes, batches, file_bytes, seconds.
    """
    from .serializer import check_write_rows
    check_write_rows(format=format, verify_hash=verify_hash, memory_budget=memory_budget, sign_key=sign_key,
                     signature=signature)
    engine = open_engine(uri_of(source), **secret_kwargs(decryption), **network)
    try:
        return engine.convert_to(os.fspath(target), format or "", verify_hash, memory_budget=memory_budget,
                                 sign_key=os.fspath(sign_key) if sign_key else "",
                                 signature=os.fspath(signature) if signature else "", **encryption_kwargs(encryption))
    finally:
        engine.close()
