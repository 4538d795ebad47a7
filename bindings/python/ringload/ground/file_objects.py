"""What a loader is given, as a path or URL the engine opens: a path, a URL, a file descriptor,
an open file (read by its path), or a file object without a path (tensorizer's CURLStreamFile or
RedisStreamFile, io.BytesIO, a pipe), read from its position to its end into an anonymous
in-memory file (memfd). Where the object tells its size, no read asks for more than remains
(CURLStreamFile refuses one that does).
"""
from __future__ import annotations

import os
import re
from typing import Optional


def uri_of(file_obj) -> str:
    """The path or URL of `file_obj`: a str, bytes or os.PathLike, a file descriptor, or an open
    file (read by its path)."""
    if isinstance(file_obj, (str, bytes, os.PathLike)):
        return os.fsdecode(file_obj)
    if isinstance(file_obj, int):
        return f"/proc/self/fd/{file_obj}"
    name = getattr(file_obj, "name", None)
    if isinstance(name, str) and os.path.isfile(name):
        return name  # an open file: ringload reads it by its path
    raise TypeError("ringload reads paths and URLs (str, bytes or os.PathLike), file descriptors and open "
                    f"files, not {type(file_obj).__name__}")


_SPOOL_CHUNK_BYTES = 8 << 20
_CONTENT_RANGE = re.compile(r"bytes\s+\d+-(\d+)/(\d+|\*)")


def _end_by_seeking(file_obj, position: int) -> Optional[int]:
    """seek(0, SEEK_END)'s answer, the position put back. Only an int counts: CURLStreamFile's
    seek returns None, and at its own position it ignores SEEK_END and stays where it is."""
    try:
        if not file_obj.seekable():
            return None
        end = file_obj.seek(0, os.SEEK_END)
    except (AttributeError, OSError, ValueError):  # CURLStreamFile: "Unsupported `whence`"
        return None
    file_obj.seek(position)
    return end if isinstance(end, int) else None


def _end_by_size(file_obj, position: int) -> Optional[int]:
    """A `size` attribute, the whole file's (fsspec's files have one)."""
    size = getattr(file_obj, "size", None)
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def _end_by_headers(file_obj, position: int) -> Optional[int]:
    """Where the body of the HTTP response a stream reads ends in the file: tensorizer's
    CURLStreamFile keeps its response's headers; a ranged response ("bytes 100-199/1000") ends
    after its last byte, a whole one after Content-Length bytes."""
    headers = getattr(file_obj, "response_headers", None)
    if not callable(getattr(headers, "get", None)):
        return None
    content_range = headers.get("Content-Range")
    if content_range:
        match = _CONTENT_RANGE.fullmatch(content_range.strip())
        return int(match[1]) + 1 if match else None
    length = str(headers.get("Content-Length", "")).strip()
    return int(length) if length.isdigit() else None


def _remaining_bytes(file_obj) -> Optional[int]:
    """How many bytes `file_obj` holds from its position, where it tells; None where not."""
    try:
        position = file_obj.tell()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: a pipe
        return None
    if not isinstance(position, int):
        return None
    for end_of in (_end_by_seeking, _end_by_size, _end_by_headers):
        end = end_of(file_obj, position)
        if end is not None:
            return max(end - position, 0)
    return None


def _read_into(file_obj, view: memoryview) -> int:
    """Up to len(view) bytes into `view`, by readinto where there is one: RedisStreamFile's
    read() pads a short read with zeros to the size asked, its readinto() counts what came."""
    readinto = getattr(file_obj, "readinto", None)
    if readinto is not None:
        return readinto(view) or 0
    data = file_obj.read(len(view))
    view[:len(data)] = data
    return len(data)


def _copy_to_end(file_obj, spool) -> None:
    """`file_obj` from its position to its end into `spool`. Where its size is known no read asks
    for more than remains: tensorizer's CURLStreamFile raises on one ("Requested 8388608 !=
    726820") and drops its connection. Where not, chunks until one comes back empty; a stream
    that ends before its size stops the copy too, and the engine names the short file."""
    remaining = _remaining_bytes(file_obj)
    chunk_bytes = _SPOOL_CHUNK_BYTES if remaining is None else min(_SPOOL_CHUNK_BYTES, remaining)
    buffer = memoryview(bytearray(chunk_bytes))
    while remaining is None or remaining > 0:
        wanted = buffer if remaining is None else buffer[:min(chunk_bytes, remaining)]
        count = _read_into(file_obj, wanted)
        if not count:
            return
        spool.write(wanted[:count])
        if remaining is not None:
            remaining -= count


class Spooled:
    """The bytes of a file object without a path, from its position, in an anonymous in-memory
    file that the engine reads by its /proc path; closed by close()."""

    def __init__(self, file_obj):
        self._fd = os.memfd_create("ringload-file-object", os.MFD_CLOEXEC)
        try:
            with open(self._fd, "wb", closefd=False) as spool:
                _copy_to_end(file_obj, spool)
        except BaseException:
            os.close(self._fd)
            raise
        self.path = f"/proc/self/fd/{self._fd}"

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def source_of(file_obj):
    """(path or URL, Spooled or None) for whatever a TensorDeserializer is given."""
    try:
        return uri_of(file_obj), None
    except TypeError:
        if not callable(getattr(file_obj, "read", None)):
            raise
    spooled = Spooled(file_obj)
    return spooled.path, spooled
