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


def evict_files(paths) -> None:
    """Only these files' pages out of the page cache (the programs that load them stay warm,
    as in a server whose binaries and libraries are loaded already); checked: a read that would
    have to wait for the disk (RWF_NOWAIT) must refuse at the start, middle and end of each."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            size = os.fstat(fd).st_size
            for offset in (0, size // 2 // 4096 * 4096, max(0, size - 4096) // 4096 * 4096):
                try:
                    os.preadv(fd, [bytearray(4096)], offset, os.RWF_NOWAIT)
                except BlockingIOError:
                    continue
                raise SystemExit(f"{path}: byte {offset} stayed in the page cache after POSIX_FADV_DONTNEED")
        finally:
            os.close(fd)
