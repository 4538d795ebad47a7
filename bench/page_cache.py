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
