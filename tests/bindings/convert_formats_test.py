#!/usr/bin/env python3
"""tests/bindings/convert_formats_test.py RINGLOAD DATA_DIR

`ringload convert` between tensorizer, safetensors and torch.save zip, every ordered pair:
values round-trip bit-exactly (sha256 of every tensor, by name); the files we write load in the
real libraries (PyPI safetensors, Debian's torch with weights_only=True) with equal values; the
output format follows --to or the extension; encryption is refused for the formats without it.
Exits 77 without torch or safetensors.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
try:
    import torch
    from safetensors.torch import load_file as safetensors_load
except ImportError as error:
    print(f"SKIP: {error}")
    sys.exit(77)


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=300)


def values(path):
    """{name: (dtype, shape, sha256)} as ringload loads the file, and its format."""
    out = run("load", path, "--json", "--sha256")
    if out.returncode != 0:
        return None, out.stderr
    loaded = json.loads(out.stdout)
    return {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in loaded["tensors"]}, loaded["format"]


def torch_sha(tensor):
    tensor = tensor.contiguous()
    data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
    return hashlib.sha256(data).hexdigest()


EXTENSION = {"tensorizer": ".tensors", "safetensors": ".safetensors", "torch": ".pt"}
work = tempfile.mkdtemp(prefix="ringload-convert-")
sources = [os.path.join(DATA, "tensorizer", name) for name in ("large_mixed_v2.tensors", "basic_v1.tensors")]
sources += [os.path.join(DATA, "torch", name) for name in ("shared_storage_views.pt", "noncontiguous.pt",
                                                                 "module_state_dict.pt")]
for source in sources:
    want, source_format = values(source)
    checks.check(f"{source} loads", want is not None, source_format)
    if want is None:
        continue
    stem = os.path.basename(source).split(".")[0]
    for first in EXTENSION:
        # Extension-chosen format, then --to into each format again.
        a = os.path.join(work, f"{stem}.a{EXTENSION[first]}")
        out = run("convert", source, a)
        checks.check(f"{stem} -> {first}", out.returncode == 0, out.stderr)
        got, fmt = values(a)
        checks.check(f"{stem} -> {first} format", fmt == first, fmt)
        checks.check(f"{stem} -> {first} values", got == want)
        for second in EXTENSION:
            b = os.path.join(work, f"{stem}.{first}.b")
            out = run("convert", a, b, "--to", second)
            got, fmt = values(b)
            checks.check(f"{stem} -> {first} -> {second}", out.returncode == 0 and fmt == second and got == want,
                         out.stderr or fmt)
        if first == "safetensors":
            peer = safetensors_load(a)
            checks.check(f"{stem} safetensors file in safetensors",
                         {k: torch_sha(v) for k, v in peer.items()} == {k: v[2] for k, v in want.items()})
        if first == "torch":
            peer = torch.load(a, weights_only=True)
            flat = {}

            def walk(prefix, value):
                if isinstance(value, torch.Tensor):
                    flat[".".join(prefix)] = torch_sha(value)
                elif isinstance(value, dict):
                    for key, item in value.items():
                        walk(prefix + [str(key)], item)
                else:
                    for index, item in enumerate(value):
                        walk(prefix + [str(index)], item)
            walk([], peer)
            checks.check(f"{stem} torch file in torch.load", flat == {k: v[2] for k, v in want.items()},
                         f"{sorted(flat)[:3]} vs {sorted(want)[:3]}")

# complex32 has no safetensors name: refused by name, nothing left behind (complex64 is C64).
target = os.path.join(work, "complex.safetensors")
out = run("convert", os.path.join(DATA, "tensorizer", "opaque_bf16_c32_v2.tensors"), target)
checks.check("complex32 to safetensors refused", out.returncode != 0 and "complex32" in out.stderr, out.stderr)
checks.check("complex32 to safetensors leaves nothing", not os.path.exists(target))

key = os.path.join(work, "key")
with open(key, "wb") as f:
    f.write(os.urandom(32))
for target in ("x.safetensors", "x.pt"):
    out = run("convert", sources[0], os.path.join(work, target), "--encrypt-key-file", key)
    checks.check(f"encrypting {target} refused", out.returncode != 0 and "only tensorizer" in out.stderr, out.stderr)
    checks.check(f"encrypting {target} leaves nothing", not os.path.exists(os.path.join(work, target)))
sys.exit(checks.finish())
