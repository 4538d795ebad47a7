"""What the safetensors drop-in adds around opening a file: safetensors' FileNotFoundError for
a missing local file, and, when a file meant as safetensors is refused as unrecognised, what
is wrong with its header instead of "unrecognised first bytes".

    with explained_open(filename, wants_safetensors=True):
        engine = _ringload.Deserializer(uri)
"""
from __future__ import annotations

import contextlib
import os
import struct
from typing import Optional

from .errors import FormatError, SourceNotFoundError

_LENGTH_FIELD_BYTES = 8
_HEADER_BYTES_MAX = 100_000_000  # safetensors' own limit (MAX_HEADER_SIZE)


def is_url(text: str) -> bool:
    return "://" in text


def check_exists(uri: str) -> None:
    """A missing local file raises FileNotFoundError with safetensors' words."""
    if not is_url(uri) and not os.path.exists(uri):
        raise SourceNotFoundError(f"No such file or directory: {uri}")


def header_problem(head: bytes, size_bytes: int) -> Optional[str]:
    """What keeps `head` (a file's first bytes, of size_bytes in all) from being a safetensors
    header, in words; None where it looks like one."""
    if size_bytes < _LENGTH_FIELD_BYTES:
        return (f"the file has {size_bytes} bytes, fewer than the 8-byte header length a safetensors "
                "file starts with (HeaderTooSmall)")
    (length,) = struct.unpack("<Q", head[:_LENGTH_FIELD_BYTES])
    if length == 0:
        return "the header length (first 8 bytes, little-endian) is 0 (InvalidHeaderLength)"
    if length > _HEADER_BYTES_MAX:
        return (f"the header length (first 8 bytes, little-endian) says {length} bytes, more than safetensors' "
                f"limit of {_HEADER_BYTES_MAX} (HeaderTooLarge)")
    if length > size_bytes - _LENGTH_FIELD_BYTES:
        return (f"the header length (first 8 bytes, little-endian) says {length} bytes, but only "
                f"{size_bytes - _LENGTH_FIELD_BYTES} follow it (InvalidHeaderLength)")
    start = head[_LENGTH_FIELD_BYTES:_LENGTH_FIELD_BYTES + 1]
    if start != b"{":
        return f"the header does not start with '{{' but with {head[8:24]!r} (InvalidHeaderStart)"
    return None


def _explain(uri: str, error: FormatError) -> FormatError:
    if is_url(uri) or "unrecognised first bytes" not in str(error):
        return error
    try:
        size_bytes = os.path.getsize(uri)
        with open(uri, "rb") as file:
            head = file.read(64)
    except OSError:
        return error
    problem = header_problem(head, size_bytes)
    if problem is None:
        return error
    return FormatError(f"{uri}: not a valid safetensors file: Error while deserializing header: {problem}")


@contextlib.contextmanager
def explained_open(uri: str, wants_safetensors: bool):
    """Checks that a local file exists; when the caller meant safetensors (safe_open, load, a
    .safetensors name), an unrecognised file is refused with what is wrong with its header."""
    check_exists(uri)
    try:
        yield
    except FormatError as error:
        if wants_safetensors or uri.endswith(".safetensors"):
            explained = _explain(uri, error)
            if explained is not error:
                raise explained from None
        raise
