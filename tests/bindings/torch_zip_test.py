#!/usr/bin/env python3
"""tests/bindings/torch_zip_test.py: torch.save zip files through the `ringload` command.

Every fixture in tests/data/torch against its manifest (written by an independent generator):
`load --json --sha256` gives each tensor's values (C order, little-endian) and `info --json`
each view's storage, offset and strides; malicious files are refused by name without their
payload running; malformed and legacy files fail with one clear line. Then files that Debian's
torch writes here (torch.save) load with the values torch.load gives back.
Usage: torch_zip_test.py RINGLOAD DATA_DIR (python with torch; exits 77 without it).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD = sys.argv[1]
DATA = os.path.join(sys.argv[2], "torch")
checks = Checks()


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=120)


def path_key(path):
    return tuple(str(component) for component in path)


def check_loadable(name, manifest):
    path = os.path.join(DATA, name)
    out = run("load", path, "--json", "--sha256")
    checks.check(f"load {name}", out.returncode == 0, out.stderr)
    if out.returncode != 0:
        return
    got = {path_key(t["path"]): t for t in json.loads(out.stdout)["tensors"]}
    checks.check(f"load {name} count", len(got) == len(manifest["tensors"]), f"{len(got)}")
    for want in manifest["tensors"]:
        g = got.get(path_key(want["path"]))
        label = f"load {name} {'/'.join(want['path'])}"
        checks.check(label + " found", g is not None)
        if g is None:
            continue
        checks.check(label + " dtype", g["dtype"] == want["dtype"].removeprefix("torch."), g["dtype"])
        checks.check(label + " shape", g["shape"] == want["shape"], g["shape"])
        checks.check(label + " values", g["sha256"] == want["sha256"], g["sha256"])
    info = run("info", path, "--json")
    checks.check(f"info {name}", info.returncode == 0, info.stderr)
    if info.returncode != 0:
        return
    index = json.loads(info.stdout)
    checks.check(f"info {name} format", index["format"] == "torch")
    storages = index["storages"]
    by_path = {path_key(t["path"]): t for t in index["tensors"]}
    for want in manifest["tensors"]:
        t = by_path.get(path_key(want["path"]))
        label = f"info {name} {'/'.join(want['path'])}"
        if t is None:
            checks.check(label + " found", False)
            continue
        checks.check(label + " storage", storages[t["storage"]]["key"] == want["storage_key"],
                     f"{storages[t['storage']]} vs {want['storage_key']}")
        checks.check(label + " offset", t["storage_offset"] == want["storage_offset"])
        checks.check(label + " strides", t["strides"] == want["stride"], f"{t['strides']} vs {want['stride']}")
    for want in manifest["storages"]:
        found = [s for s in storages if s["key"] == want["key"]]
        checks.check(f"info {name} storage {want['key']}", len(found) == 1 and found[0]["bytes"] == want["nbytes"],
                     f"{found} vs {want['nbytes']}")


def check_refused(name, manifest):
    path = os.path.join(DATA, name)
    # What the payloads would leave behind if anything ran them (see the manifests' notes).
    sentinels = set(glob.glob("/tmp/torch_fixture_pwned*"))
    for command in ("info", "load"):
        out = run(command, path)
        label = f"{command} {name}"
        checks.check(label + " refused", out.returncode != 0 and out.stderr.startswith("ringload: "), out.stderr)
        checks.check(label + " one line", out.stderr.count("\n") == 1, out.stderr)
        checks.check(label + " names the file", name in out.stderr, out.stderr)
        if manifest["kind"] == "malicious":
            checks.check(label + " names the global", "forbidden global" in out.stderr, out.stderr)
        if manifest["expect"] == "reject_legacy_format":
            checks.check(label + " says legacy", "legacy torch format" in out.stderr, out.stderr)
    checks.check(f"{name} payload did not run", set(glob.glob("/tmp/torch_fixture_pwned*")) == sentinels)


for manifest_path in sorted(glob.glob(os.path.join(DATA, "*.json"))):
    manifest = json.load(open(manifest_path))
    name = os.path.basename(manifest_path)[: -len(".json")] + ".pt"
    if manifest["expect"] == "load":
        check_loadable(name, manifest)
    else:
        check_refused(name, manifest)

# Files torch writes on this machine, read back against torch.load's own values.
try:
    import torch
except ImportError:
    print("SKIP the torch.save round trips: no torch for this python")
    sys.exit(77 if checks.failed == 0 and checks.passed == 0 else checks.finish())

work = tempfile.mkdtemp(prefix="ringload-torch-zip-")
base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
state = {
    "fp32": torch.randn(33, 17),
    "fp16": torch.randn(4, 5).half(),
    "bf16": torch.randn(7).bfloat16(),
    "int64": torch.arange(-5, 5),
    "bool": torch.tensor([True, False, True]),
    "scalar": torch.tensor(2.5, dtype=torch.float64),
    "view_t": base.t(),
    "view_slice": base[1:3, ::2],
    "base": base,
    "big": torch.randn(512, 1024),
    "nested": {"layers": [torch.ones(3), torch.zeros(2, 2)]},
    "empty_view": torch.empty(2, 3).t()[:0],  # empty and non-contiguous: nothing to gather
    "expanded": torch.arange(4.0).reshape(4, 1).expand(4, 3),
}
saved = os.path.join(work, "state.pt")
torch.save(state, saved)
expected = torch.load(saved, weights_only=True)


def flatten(prefix, value, out):
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif isinstance(value, dict):
        for key, item in value.items():
            flatten(prefix + (str(key),), item, out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            flatten(prefix + (str(i),), item, out)
    return out


want = flatten((), expected, {})
out = run("load", saved, "--json", "--sha256")
checks.check("torch.save file loads", out.returncode == 0, out.stderr)
if out.returncode == 0:
    import hashlib

    got = {path_key(t["path"]): t for t in json.loads(out.stdout)["tensors"]}
    checks.check("torch.save file count", len(got) == len(want), f"{len(got)} vs {len(want)}")
    for key, tensor in want.items():
        data = tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        g = got.get(key)
        checks.check(f"torch.save {'/'.join(key)}", g is not None and g["sha256"] == hashlib.sha256(data).hexdigest(),
                     f"{g and g['sha256']}")
for dtype in ("float16", "bfloat16"):
    out = run("load", saved, "--dtype", dtype, "--json", "--sha256", "--filter", "^(fp32|view_t|big)$")
    checks.check(f"torch.save --dtype {dtype}", out.returncode == 0, out.stderr)
    if out.returncode == 0:
        import hashlib

        for t in json.loads(out.stdout)["tensors"]:
            ref = want[path_key(t["path"])].to(getattr(torch, dtype)).contiguous()
            data = ref.reshape(-1).view(torch.uint8).numpy().tobytes()
            checks.check(f"torch.save --dtype {dtype} {t['name']}", t["sha256"] == hashlib.sha256(data).hexdigest())
sys.exit(checks.finish())
