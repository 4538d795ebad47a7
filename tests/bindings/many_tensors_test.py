#!/usr/bin/env python3
"""tests/bindings/many_tensors_test.py RINGLOAD [COUNT]

A large index (200,000 one-byte tensors by default) is read right in every format: a
safetensors file whose header this script writes itself (json, in a shuffled name order, so
the file's order is not the names' order), the same converted by `ringload convert` to torch
zip and tensorizer; `ringload info --json` of each must list every name once, in the file's
order (safetensors and tensorizer: the data's order; torch: the pickle's), with dtype uint8,
shape [1] and a data_offset whose byte in the file is that tensor's value (an independent check
of every offset). A name given twice in a safetensors header, a tensorizer file or a torch
pickle is refused with "twice". Speed is measured in bench/many_tensors.py, not here.
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD = sys.argv[1]
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
checks = Checks()
work = tempfile.mkdtemp(prefix="ringload-many-")


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=600)


def write_safetensors(path, names, values):
    """names[i] holds the one byte values[i]; data in list order, header keys shuffled."""
    entries = {name: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i, name in enumerate(names)}
    keys = list(entries)
    random.Random(7).shuffle(keys)
    header = json.dumps({key: entries[key] for key in keys}, separators=(",", ":")).encode()
    header += b" " * (-(8 + len(header)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(values))


def info(path):
    out = run("info", path, "--json")
    return (json.loads(out.stdout), "") if out.returncode == 0 else (None, out.stderr)


def check_index(label, path, names, values):
    listed, error = info(path)
    checks.check(f"{label}: info", listed is not None, error)
    if listed is None:
        return
    rows = listed["tensors"]
    checks.check(f"{label}: every tensor once, in order", [row["name"] for row in rows] == names,
                 f"{len(rows)} rows, first {[row['name'] for row in rows[:3]]}")
    checks.check(f"{label}: dtype and shape", all(row["dtype"] == "uint8" and row["shape"] == [1] for row in rows))
    with open(path, "rb") as f:
        data = f.read()
    value_of = dict(zip(names, values))
    wrong = [row["name"] for row in rows if data[row["data_offset"]] != value_of.get(row["name"])]
    checks.check(f"{label}: each data_offset holds that tensor's byte", not wrong, f"{len(wrong)} wrong: {wrong[:3]}")


# Names of two shapes (flat and nested, as modules make them), values that tell neighbours apart.
names = [f"model.layers.{i // 64}.experts.{i % 64}.w" if i % 3 else f"t{i}" for i in range(COUNT)]
values = [(i * 7 + 3) % 251 for i in range(COUNT)]
source = os.path.join(work, "many.safetensors")
write_safetensors(source, names, values)
check_index("safetensors", source, names, values)
for target in ("many.pt", "many.tensors"):
    out = run("convert", source, os.path.join(work, target))
    checks.check(f"convert to {target}", out.returncode == 0, out.stderr)
    if out.returncode == 0:
        check_index(target, os.path.join(work, target), names, values)

# The same name twice: refused in every format, never a silent pick of one of them.
twice = os.path.join(work, "twice.safetensors")
with open(twice, "wb") as f:
    header = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'
    f.write(struct.pack("<Q", len(header)) + header + b"\x01\x02")
out = run("info", twice)
checks.check("safetensors: a name twice refused", out.returncode != 0 and "twice" in out.stderr, out.stderr)
pair = os.path.join(work, "pair.safetensors")
write_safetensors(pair, ["xa", "xb"], [1, 2])
for target in ("pair.tensors", "pair.pt"):
    path = os.path.join(work, target)
    out = run("convert", pair, path)
    checks.check(f"convert pair to {target}", out.returncode == 0, out.stderr)
    if target == "pair.tensors":
        with open(path, "rb") as f:
            data = f.read()
        # The name is in the metadata index and in the tensor's own header: both renamed.
        checks.check("tensorizer: the second name is there to rename", data.count(b"xb") == 2)
        with open(path, "wb") as f:
            f.write(data.replace(b"xb", b"xa"))
    else:
        with zipfile.ZipFile(path) as archive:
            records = {item.filename: archive.read(item.filename) for item in archive.infolist()}
        pickle_name = next(name for name in records if name.endswith("/data.pkl"))
        checks.check("torch: the second name is there to rename", records[pickle_name].count(b"xb") == 1)
        records[pickle_name] = records[pickle_name].replace(b"xb", b"xa")
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in records.items():
                archive.writestr(name, data)
    out = run("info", path)
    checks.check(f"{target}: a name twice refused", out.returncode != 0 and "twice" in out.stderr,
                 out.stdout[-300:] + out.stderr)
sys.exit(checks.finish())
