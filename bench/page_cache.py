"""bench/page_cache.py: a file's pages hot (read once) or cold (the page cache dropped, root),
before a timed load; shared by the benchmark scripts that run a load per process."""
import os


def prepare_page_cache(path: str, cache: str) -> None:
    os.sync()
    if cache == "hot":
        with open(path, "rb") as file:
            while file.read(16 << 20):
                pass
        return
    with open("/proc/sys/vm/drop_caches", "w") as file:
        file.write("3\n")


def _cached_at(fd: int, size: int):
    """The first of start, middle and end whose page is in the page cache (a read that would
    have to wait for the disk, RWF_NOWAIT, refuses), or None."""
    for offset in (0, size // 2 // 4096 * 4096, max(0, size - 4096) // 4096 * 4096):
        try:
            os.preadv(fd, [bytearray(4096)], offset, os.RWF_NOWAIT)
        except BlockingIOError:
            continue
        return offset
    return None


def evict_files(paths, tries: int = 3) -> None:
    """Only these files' pages out of the page cache (the programs that load them stay warm,
    as in a server whose binaries and libraries are loaded already); checked at the start,
    middle and end of each. A page still held for a moment (the last load's process exiting)
    gets another try; the check's own reads may start readahead, which is dropped again."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            for attempt in range(tries):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                cached = _cached_at(fd, size)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                if cached is None:
                    break
                if attempt + 1 == tries:
                    raise SystemExit(f"{path}: byte {cached} stayed in the page cache after POSIX_FADV_DONTNEED")
        finally:
            os.close(fd)
