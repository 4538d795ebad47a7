"""What the package asks the engine about a URI before opening it: whether a registered source
reads it or it is a local file, safetensors' FileNotFoundError for a missing local file, and
the one rule for when a CPU load maps a file's pages. The engine itself explains a file that no
format recognises when the caller meant one (expected_format=).

    check_exists(uri)
    engine = _ringload.Deserializer(uri, expected_format="safetensors")
"""
from __future__ import annotations

import os
from typing import Optional

from .. import _ringload
from ..errors import RingloadError, SourceNotFoundError


def is_remote(uri) -> bool:
    """Whether a registered source (http(s), s3, gs, az, redis, ...) reads `uri`."""
    return _ringload.source_of(str(uri)) is not None


def local_path(uri) -> Optional[str]:
    """The local file `uri` names (file:// taken off), or None when a registered source reads it."""
    return _ringload.local_path(str(uri))


def check_exists(uri: str) -> None:
    """A missing local file raises FileNotFoundError with safetensors' words. (Another
    scheme:// is left to open_engine: fsspec's, or the engine's error naming what it reads.)"""
    try:
        path = local_path(uri)
    except RingloadError:  # a scheme:// no source takes
        return
    if path is not None and not os.path.exists(path):
        raise SourceNotFoundError(f"No such file or directory: {uri}")


def format_facts(name: str) -> dict:
    """What the engine says of the format called `name` (its registered Format's properties)."""
    return next(facts for facts in _ringload.formats() if facts["name"] == name)


def weight_extensions() -> tuple:
    """Every registered format's extensions (".tensors", ".safetensors", ".pt", ...)."""
    return tuple(extension for facts in _ringload.formats() for extension in facts["extensions"])


def _placement_words(options: dict) -> dict:
    """What a load's keyword arguments say that placement depends on."""
    return {"verify": bool(options.get("verify_hash")), "encrypted": options.get("encryption") is not None,
            "signed": options.get("signature") is not None}


def auto_placement(uri, device, use: str, options: dict) -> str:
    """Placement "auto" for a load of `uri` by the engine's one rule (ringload/placement.hpp):
    "mapped" where its tensors may stay in the file's pages and the page cache holds it (use
    "into_parameters": only on one CPU or less), else "auto" (the arena, or the pages where the
    arena would not fit). `options`: the load's keywords (verify_hash, encryption, signature)."""
    return _ringload.choose_placement("auto", str(uri), str(device), use, **_placement_words(options))


def why_not_mappable(uri, device, options: dict) -> Optional[str]:
    """Why the tensors of `uri` cannot stay in its pages (ringload/placement.hpp), or None."""
    return _ringload.why_not_mappable(str(uri), str(device), **_placement_words(options))


def fsspec_reader(uri: str):
    """(size, read, how) for Deserializer(reader=...) when no registered source reads `uri` but an
    installed fsspec file system does (hf://, abfs://, gcsfs's gcs://, ...): the slower path,
    one range at a time through fsspec's cat_file, with the engine's stages after it. None when
    `uri` is a local path or a registered source's, or fsspec is not installed or does not know
    the scheme (the engine's error then names the forms it reads)."""
    text = str(uri)
    if "://" not in text or text.startswith("file://") or is_remote(text):
        return None
    try:
        import fsspec
        fs, path = fsspec.core.url_to_fs(text)
    except (ImportError, ValueError):
        return None

    def read(offset: int, length: int) -> bytes:
        return fs.cat_file(path, start=offset, end=offset + length)

    return fs.size(path), read, f"fsspec {type(fs).__name__}"


def open_engine(uri: str, **kwargs):
    """_ringload.Deserializer(uri, ...), through fsspec_reader where only fsspec reads `uri`.
    With signature= (and public_key= or certificate_chain=, signing.SIGNATURE_OPTIONS) every
    load of it reads the whole file and checks it against the signed statement."""
    from .signing import open_signed, take_signature
    given = take_signature(kwargs)
    if given is None:
        reader = fsspec_reader(uri)
        return _ringload.Deserializer(uri, reader=reader, **kwargs) if reader else _ringload.Deserializer(uri, **kwargs)
    _, signed = open_signed(uri, given)
    from ..errors import RingloadError
    try:
        engine = _ringload.Deserializer(uri, **kwargs)
    except RingloadError:
        signed.raise_if_changed()  # a changed file may fail its parse first: the engine's rule says so
        raise
    engine.set_signed_file(signed)
    return engine
