#!/usr/bin/env python3
"""tests/bindings/convert_formats_test.py RINGLOAD DATA_DIR

`ringload convert` between tensorizer, safetensors and torch.save zip, every ordered pair, from
fixtures written by the real tensorizer and torch: every file we write is read by the format's
own library (PyPI safetensors, Debian's torch with weights_only=True, the real tensorizer) and
must hold the source fixture's tensors as its manifest gives them (name, dtype, shape, sha256
of the bytes), through one conversion and through two; the output format (by its first bytes)
follows --to or the extension; encryption is refused for the formats without it.
Exits 77 without torch or safetensors.
"""
import hashlib
import json
import os
import shutil
import struct
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
import tensorizer  # noqa: E402  (installed with the peers: a missing one is an error, not a skip)


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=300)


def manifest_values(source):
    """{name: (dtype, shape, sha256)} of a fixture, from its manifest (X.tensors.json, X.json)."""
    manifest_path = source + ".json" if source.endswith(".tensors") else source[:-len(".pt")] + ".json"
    with open(manifest_path) as f:
        manifest = json.load(f)
    return {".".join(str(part) for part in t["path"]): (t["dtype"].removeprefix("torch."), t["shape"], t["sha256"])
            for t in manifest["tensors"]}


def torch_sha(tensor):
    tensor = tensor.detach().contiguous()
    data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
    return hashlib.sha256(data).hexdigest()


def flatten(value, prefix=()):
    """{dotted name: tensor} of a tree of mappings and sequences (torch.load's, tensorizer's)."""
    if isinstance(value, torch.Tensor):
        return {".".join(prefix): value}
    items = value.items() if hasattr(value, "items") else enumerate(value)
    out = {}
    for key, item in items:
        out.update(flatten(item, prefix + (str(key),)))
    return out


def peer_values(path, fmt):
    """{name: (dtype, shape, sha256)} as the format's own library reads the file, or the error."""
    try:
        if fmt == "safetensors":
            tensors = safetensors_load(path)
        elif fmt == "torch":
            tensors = flatten(torch.load(path, weights_only=True))
        else:
            with tensorizer.TensorDeserializer(path, device="cpu") as theirs:
                tensors = {name: tensor.detach().clone() for name, tensor in flatten(theirs).items()}
    except Exception as error:  # noqa: BLE001 - reported as the check's detail
        return f"{fmt} cannot read it: {type(error).__name__}: {error}"
    return {name: (str(t.dtype).removeprefix("torch."), list(t.shape), torch_sha(t)) for name, t in tensors.items()}


def format_of(path):
    """The format by the file's first bytes (not by ringload)."""
    with open(path, "rb") as f:
        head = f.read(9)
    if head[:4] == b"|TZR":
        return "tensorizer"
    if head[:4] == b"PK\x03\x04":
        return "torch"
    if len(head) == 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] < os.path.getsize(path):
        return "safetensors"
    return repr(head)


def differences(got, want):
    if not isinstance(got, dict):
        return got
    if sorted(got) != sorted(want):
        return f"names {sorted(set(got) ^ set(want))[:5]} differ"
    return "; ".join(f"{name}: {got[name]} != {want[name]}" for name in want if got[name] != want[name])[:2000]


EXTENSION = {"tensorizer": ".tensors", "safetensors": ".safetensors", "torch": ".pt"}
work = tempfile.mkdtemp(prefix="ringload-convert-")
sources = [os.path.join(DATA, "tensorizer", name) for name in ("large_mixed_v2.tensors", "basic_v1.tensors")]
sources += [os.path.join(DATA, "torch", name) for name in ("shared_storage_views.pt", "noncontiguous.pt",
                                                                 "module_state_dict.pt")]
for source in sources:
    want = manifest_values(source)
    checks.check(f"{source} has a manifest with tensors", len(want) > 0)
    stem = os.path.basename(source).split(".")[0]
    for first in EXTENSION:
        # Extension-chosen format, then --to into each format again.
        a = os.path.join(work, f"{stem}.a{EXTENSION[first]}")
        out = run("convert", source, a)
        checks.check(f"{stem} -> {first}", out.returncode == 0, out.stderr)
        if out.returncode != 0:
            continue
        checks.check(f"{stem} -> {first} format", format_of(a) == first, format_of(a))
        got = peer_values(a, first)
        checks.check(f"{stem} -> {first}: {first}'s reader gets the manifest's tensors", got == want,
                     differences(got, want))
        for second in EXTENSION:
            b = os.path.join(work, f"{stem}.{first}.b")
            out = run("convert", a, b, "--to", second)
            checks.check(f"{stem} -> {first} -> {second}", out.returncode == 0, out.stderr)
            if out.returncode != 0:
                continue
            checks.check(f"{stem} -> {first} -> {second} format", format_of(b) == second, format_of(b))
            got = peer_values(b, second)
            checks.check(f"{stem} -> {first} -> {second}: {second}'s reader gets the manifest's tensors",
                         got == want, differences(got, want))

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
shutil.rmtree(work, ignore_errors=True)
sys.exit(checks.finish())
