#!/usr/bin/env python3
"""tests/bindings/disk_full_test.py RINGLOAD: writing to a file system without room (issue #27, part 3).

On a 16 MiB tmpfs mounted for the test: `ringload convert` of a 24 MiB file into it, to each
of the three formats, fails with one line naming the target and "No space left on device",
exit status 1, and leaves nothing in the directory (no file under the final name, no temporary
file); a file that fits is written and reads back. Exits 77 (skipped, saying why) where a tmpfs
cannot be mounted (not root, no mount rights).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD = sys.argv[1]
checks = Checks()
check = checks.check


def safetensors(path, megabytes):
    size = megabytes << 20
    header = json.dumps({"w": {"dtype": "F32", "shape": [size // 4], "data_offsets": [0, size]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + size)


with tempfile.TemporaryDirectory() as tmp:
    small = os.path.join(tmp, "small")
    os.mkdir(small)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", small], capture_output=True, text=True)
    if mounted.returncode != 0:
        print(f"SKIP: cannot mount a 16 MiB tmpfs here: {mounted.stderr.strip()}")
        sys.exit(77)
    try:
        big, fits = os.path.join(tmp, "big.safetensors"), os.path.join(tmp, "fits.safetensors")
        safetensors(big, 24)
        safetensors(fits, 4)
        for extension in (".safetensors", ".tensors", ".pt"):
            target = os.path.join(small, "out" + extension)
            out = subprocess.run([RINGLOAD, "convert", big, target], capture_output=True, text=True, timeout=120)
            lines = out.stderr.strip().splitlines()
            check(f"{extension}: refused with exit status 1", out.returncode == 1, f"exit {out.returncode}")
            check(f"{extension}: one line naming the target and the cause", len(lines) == 1 and target in lines[0]
                  and "No space left on device" in lines[0], out.stderr)
            check(f"{extension}: nothing left in the directory", os.listdir(small) == [], os.listdir(small))
        target = os.path.join(small, "fits.tensors")
        out = subprocess.run([RINGLOAD, "convert", fits, target], capture_output=True, text=True, timeout=120)
        check("a file that fits is written", out.returncode == 0 and os.listdir(small) == ["fits.tensors"],
              out.stderr + str(os.listdir(small)))
        out = subprocess.run([RINGLOAD, "load", target, "--verify"], capture_output=True, text=True, timeout=120)
        check("and reads back verified", out.returncode == 0, out.stderr)
    finally:
        subprocess.run(["umount", small], check=False)

sys.exit(checks.finish())
