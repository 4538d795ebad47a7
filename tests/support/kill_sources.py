"""tests/support/kill_sources.py: what the kill -9 tests write and check (issue #27, part 3).

    write_varied_safetensors(path, count=4, mib_each=64, seed=27)   # a source to convert or publish
    expected, why = loaded_sha256(RINGLOAD, path)                    # None and stderr on failure

The source's tensors hold varied bytes (a random MiB, rotated per MiB: not a sparse file, and
not compressible into a fast write), so that a kill lands mid-write.
"""
import json
import random
import struct
import subprocess


def write_varied_safetensors(path, count, mib_each, seed):
    rng = random.Random(seed)
    each = mib_each << 20
    header = {f"t{i}": {"dtype": "U8", "shape": [each], "data_offsets": [i * each, (i + 1) * each]}
              for i in range(count)}
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    block = rng.randbytes(1 << 20)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded)
        for i in range(count * mib_each):
            f.write(block[i:] + block[:i])


def loaded_sha256(ringload, uri, *extra, env=None):
    """The sorted sha256 of the tensors as `ringload load` gives them (with tensorizer's stored
    hashes checked for a .tensors path), or None and why."""
    verify = ["--verify"] if uri.endswith(".tensors") and "--verify" not in extra else []
    out = subprocess.run([ringload, "load", uri, *verify, "--sha256", "--json", *extra], capture_output=True,
                         text=True, timeout=120, env=env)
    if out.returncode != 0:
        return None, out.stderr
    return sorted(t["sha256"] for t in json.loads(out.stdout)["tensors"]), ""
