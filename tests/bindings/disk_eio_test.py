#!/usr/bin/env python3
"""tests/bindings/disk_eio_test.py RINGLOAD EIO_FS DATA_DIR: reads that fail with EIO (issue #27, part 3).

A disk's bad sector, made honestly where this kernel has no device-mapper: ringload_eio_fs
(tests/tools/eio_fs.c) is a FUSE file system showing one file whose reads fail with EIO in a
given byte range; the kernel hands that EIO to pread and io_uring alike. For each format (the
tensorizer fixture, and its conversions to safetensors and torch zip), each place of the fault
(the header, the middle of the data, the last 4 KiB) and each read mode (O_DIRECT, buffered),
`ringload load` (--verify where the format has checksums) and `ringload convert` must fail with exit status 1 and one line naming
the file and the I/O error, leaving no output file (a safetensors file's mapped load too); `ringload info` must fail where the fault
is in what it reads. A control run with no bad range loads whole (the sha256s of the manifest).
Exits 77 where FUSE cannot be mounted (no /dev/fuse, not root).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD, EIO_FS, DATA = sys.argv[1:4]
checks = Checks()
check = checks.check
FIXTURE = os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors")
manifest = json.load(open(FIXTURE + ".json"))
want = sorted(t["sha256"] for t in manifest["tensors"])


class EioMount:
    """ringload_eio_fs over `source` with reads of [offset, offset + length) failing; the file is at .path."""

    def __init__(self, source, offset, length, mountpoint):
        self.mountpoint = mountpoint
        self.path = os.path.join(mountpoint, os.path.basename(source))
        self.process = subprocess.Popen([EIO_FS, source, str(offset), str(length), mountpoint],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ends = time.monotonic() + 10
        while not os.path.exists(self.path):
            if self.process.poll() is not None or time.monotonic() > ends:
                self.close()
                raise RuntimeError(f"ringload_eio_fs did not mount: {self.process.stderr.read().strip()[-300:]}")
            time.sleep(0.02)

    def close(self):
        subprocess.run(["umount", self.mountpoint], capture_output=True)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run(*args):
    started = time.monotonic()
    out = subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=120)
    return out, time.monotonic() - started


def verify(form):  # safetensors files hold no checksums: --verify is refused for them
    return ["--verify"] if form != "safetensors" else []


# Printed, rightly, when the kernel has no io_uring to spare (its locked-memory limit, with other
# tests' loads at once): the load goes on with pread, and the failure is still its one line.
FALLBACK_NOTICE = "ringload: the kernel refused an io_uring"


def fails_cleanly(label, path, out, seconds, why=("Input/output error",)):
    lines = [line for line in out.stderr.strip().splitlines() if not line.startswith(FALLBACK_NOTICE)]
    check(f"{label}: exit status 1", out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
    check(f"{label}: one line naming the file and the I/O error",
          len(lines) == 1 and os.path.basename(path) in lines[0] and any(w in lines[0] for w in why),
          out.stderr[-300:])
    check(f"{label}: within 30 s", seconds < 30, f"{seconds:.1f} s")
    print(f"  {label}: {seconds:.1f} s: {lines[-1] if lines else ''}")


with tempfile.TemporaryDirectory() as tmp:
    mountpoint = os.path.join(tmp, "mnt")
    os.mkdir(mountpoint)
    try:
        EioMount(FIXTURE, 0, 0, mountpoint).close()
    except (RuntimeError, OSError) as error:
        print(f"SKIP: FUSE cannot be mounted here: {error}")
        sys.exit(77)

    sources = {"tensorizer": FIXTURE}
    for form, suffix in (("safetensors", "safetensors"), ("torch", "pt")):
        sources[form] = os.path.join(tmp, f"large_mixed.{suffix}")
        out, _ = run("convert", FIXTURE, sources[form], "--to", form)
        check(f"convert the fixture to {form}", out.returncode == 0, out.stderr[-300:])

    for form, source in sources.items():
        size = os.path.getsize(source)
        mount = EioMount(source, 0, 0, mountpoint)
        try:
            for mode in ("direct", "buffered"):
                out, _ = run("load", mount.path, *verify(form), "--sha256", "--json", "--read-mode", mode)
                got = sorted(t["sha256"] for t in json.loads(out.stdout)["tensors"]) if out.returncode == 0 else []
                check(f"{form} {mode}: no fault: loads whole", got == want, out.stderr[-300:])
        finally:
            mount.close()
        faults = {"in the header": (0, 4096), "in the middle": (size // 2 // 4096 * 4096, 4096),
                  "in the last 4 KiB": (size - 4096, 4096)}
        for where, (offset, length) in faults.items():
            mount = EioMount(source, offset, length, mountpoint)
            try:
                for mode in ("direct", "buffered"):
                    label = f"{form} EIO {where}, {mode}"
                    out, seconds = run("load", mount.path, *verify(form), "--read-mode", mode)
                    fails_cleanly(f"{label}: load", mount.path, out, seconds)
                if form == "safetensors":  # a mapped load reads through the page cache: EFAULT, not EIO
                    out, seconds = run("load", mount.path, "--placement", "mapped")
                    fails_cleanly(f"{form} EIO {where}: mapped load", mount.path, out, seconds,
                                  ("Input/output error", "the disk failed to read it"))
                target = os.path.join(tmp, f"out_{form}.safetensors")
                out, seconds = run("convert", mount.path, target, "--to", "safetensors")
                fails_cleanly(f"{form} EIO {where}: convert", mount.path, out, seconds)
                check(f"{form} EIO {where}: convert leaves nothing",
                      sorted(os.listdir(tmp)) == sorted(["mnt", *(os.path.basename(p) for p in sources.values()
                                                                 if p.startswith(tmp))]),
                      str(os.listdir(tmp)))
                if where == "in the header":
                    out, seconds = run("info", mount.path)
                    fails_cleanly(f"{form} EIO {where}: info", mount.path, out, seconds)
            finally:
                mount.close()

sys.exit(checks.finish())
