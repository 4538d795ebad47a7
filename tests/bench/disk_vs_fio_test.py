#!/usr/bin/env python3
"""tests/bench/disk_vs_fio_test.py RINGLOAD WORK_DIR [SIZE_MIB]: `ringload bench limits`' O_DIRECT
disk figure agrees with fio's on the same file within 10% (issue #7): queue depth 16, 4 MiB
reads, io_uring, registered huge-page buffers on both sides, the medians of five interleaved
runs each (up to three attempts, see below). Skipped (77) without fio or where the file system
refuses O_DIRECT (tmpfs).

A 1 GiB file: fio's bandwidth includes a fixed start-up cost of about 27 ms (its runtime for
256 MiB..2 GiB of the same file fits 27 ms + size / 1.71 GB/s here), which is 8% of a 512 MiB
read at this disk's rate and made fio's figure read low against ours (ratios 1.12-1.29 in CI).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

ringload, work_root = sys.argv[1:3]
size_mib = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
if not shutil.which("fio"):
    print("SKIP: fio is not installed")
    sys.exit(77)
os.makedirs(work_root, exist_ok=True)
path = os.path.join(work_root, "disk-vs-fio.bin")
with open(path, "wb") as out:
    block = os.urandom(4 << 20)
    for _ in range(size_mib // 4):
        out.write(block)
    out.flush()
    os.fsync(out.fileno())
try:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError as error:
        print(f"SKIP: O_DIRECT refused here: {error}")
        sys.exit(77)

    def fio_read(queue_depth):
        # The same buffers as ours: registered (--fixedbufs) and on huge pages (glibc's malloc
        # asks for transparent huge pages with this tunable; fio allocates them with malloc),
        # starting at a 2 MiB boundary as ours do (--iomem_align): malloc's block is not aligned,
        # so its first and last 2 MiB were 4 KiB pages, and a 4 MiB read into those is split into
        # 1 MiB requests (the disk's max_segments is 254). Unaligned, fio read 1.6-1.8 GB/s at
        # queue depth 1 where ours read 3.1-3.6 (2026-11-24), and 10-28% less at depth 16.
        done = subprocess.run(["fio", "--name=r", f"--filename={path}", "--rw=read", "--bs=4M",
                               f"--iodepth={queue_depth}", "--ioengine=io_uring", "--direct=1", "--fixedbufs",
                               "--iomem_align=2M", "--output-format=json"],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})
        return json.loads(done.stdout)["jobs"][0]["read"]["bw_bytes"] / 1e9

    def fio():
        # Read the file as `bench limits` does before its qd16 figure, at depths 1 and 4 first:
        # this VM's disk reads a file it has just read faster (a fresh 1 GiB file here: 1.15-1.3
        # GB/s on the first fio pass, 1.5-1.8 right after), and with fio reading it once per
        # pair against our three reads ours came out 1.15-1.34x fio's in CI.
        fio_read(1)
        fio_read(4)
        return fio_read(16)

    def ours():
        out = os.path.join(work_root, "disk-vs-fio.json")
        subprocess.run([ringload, "bench", "limits", "--file", path, "--only", "disk", "--json", out], capture_output=True, check=True)
        figures = {f["name"]: f for f in json.load(open(out))["figures"]}
        os.remove(out)
        return figures["disk O_DIRECT qd16"]["gb_per_s"]

    # The disk of a shared VM swings by +-20% from one second to the next: each attempt takes
    # the medians of five interleaved runs; the figures must agree within 10% in one of three
    # attempts (a systematic gap of more than 10% fails them all).
    ratios = []
    for attempt in range(3):
        fio_rates, our_rates = [], []
        for _ in range(5):
            fio_rates.append(fio())
            our_rates.append(ours())
        ratio = statistics.median(our_rates) / statistics.median(fio_rates)
        ratios.append(ratio)
        print(f"fio {[round(r, 3) for r in fio_rates]} GB/s, ringload bench limits "
              f"{[round(r, 3) for r in our_rates]} GB/s: ratio of medians {ratio:.3f}", flush=True)
        if 0.9 <= ratio <= 1.1:
            break
    else:
        sys.exit(f"disk figure differs from fio's by more than 10% in every attempt (ratios "
                 f"{', '.join(f'{r:.3f}' for r in ratios)})")
finally:
    os.remove(path)
