#!/usr/bin/env python3
"""tests/bindings/memory_limit_test.py RINGLOAD DATA_DIR: loads bigger than a memory cgroup's limit (issue #27, part 2).

In a child memory cgroup (v1 or v2) limited to 512 MiB, as a container limit would: a 1 GiB
safetensors file loads anyway with the automatic placement (into the file's pages, memory the
kernel can reclaim); asked for the arena, and for a 1 GiB tensorizer file (which cannot stay
in the file's pages), ringload refuses before reading, with an out-of-memory error that names
the need and the limit; before this check the process was OOM-killed without a message. A
small load in the same cgroup still works. Exits 77 (skipped, saying why) where no memory
cgroup can be made (not root, cgroups read-only).
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD, DATA = sys.argv[1], sys.argv[2]
LIMIT = 512 << 20
checks = Checks()
check = checks.check


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def make_cgroup():
    """(directory, file that takes a pid): a child of this process's memory cgroup, limited."""
    lines = open("/proc/self/cgroup").read().splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            parent = "/sys/fs/cgroup/memory" + path
            child = os.path.join(parent, f"ringload-test-{os.getpid()}")
            os.mkdir(child)
            with open(os.path.join(child, "memory.limit_in_bytes"), "w") as f:
                f.write(str(LIMIT))
            return child
    for line in lines:
        if line.startswith("0::"):
            parent = "/sys/fs/cgroup" + line[3:]
            if "memory" not in open(os.path.join(parent, "cgroup.subtree_control")).read().split():
                raise OSError("the memory controller is not enabled below this cgroup")
            child = os.path.join(parent.rstrip("/"), f"ringload-test-{os.getpid()}")
            os.mkdir(child)
            with open(os.path.join(child, "memory.max"), "w") as f:
                f.write(str(LIMIT))
            return child
    raise OSError("no memory cgroup in /proc/self/cgroup")


def in_cgroup(cgroup, *args):
    script = f'echo $$ > {cgroup}/cgroup.procs && exec "$@"'
    return subprocess.run(["sh", "-c", script, "sh", RINGLOAD, *args], capture_output=True, text=True, timeout=300)


try:
    cgroup = make_cgroup()
except OSError as error:
    skip(f"cannot make a memory cgroup here: {error}")

try:
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.safetensors")
        size = 1 << 30
        header = json.dumps({"big": {"dtype": "F32", "shape": [size // 4], "data_offsets": [0, size]}}).encode()
        header += b" " * (-len(header) % 8)
        with open(big, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
            f.truncate(8 + len(header) + size)  # zeros, without writing them
        big_tensorizer = os.path.join(tmp, "big.tensors")
        out = subprocess.run([RINGLOAD, "convert", big, big_tensorizer], capture_output=True, text=True, timeout=300)
        check("convert", out.returncode == 0, out.stderr)

        out = in_cgroup(cgroup, "load", big)
        check("safetensors over the limit loads into the file's pages", out.returncode == 0 and
              "file's pages" in out.stdout and "1073741824 bytes" in out.stdout, out.stdout + out.stderr)
        for label, args in (("safetensors in the arena", ["load", big, "--placement", "arena"]),
                            ("tensorizer", ["load", big_tensorizer])):
            out = in_cgroup(cgroup, *args)
            check(f"{label} over the limit is refused, not killed", out.returncode == 1, f"exit {out.returncode}")
            # The need is the tensor's GiB, plus (read with O_DIRECT) under a page that places
            # it at its file offset's distance from a page boundary (load_layout.hpp).
            need = re.search(r"needs (\d+) bytes", out.stderr)
            check(f"{label}: the error names the need and the limit",
                  "out of memory" in out.stderr and need is not None and
                  1073741824 <= int(need.group(1)) < 1073741824 + 4096 and
                  f"of {LIMIT} bytes" in out.stderr, out.stderr)
        out = in_cgroup(cgroup, "load", os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors"), "--verify")
        check("a small load in the same cgroup", out.returncode == 0, out.stderr)
finally:
    os.rmdir(cgroup)

sys.exit(checks.finish())
