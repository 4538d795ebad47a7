#!/usr/bin/env python3
"""tests/bindings/formats_http_test.py RINGLOAD DATA_DIR

safetensors and torch zip files over http:// (HTTP/1.1) and h2c (HTTP/2) from a real nginx on
127.0.0.1 whose access log records every request's Range header: reading a torch zip file's
index (`ringload info`) takes at most 3 range requests, from a small fixture up to a file whose
data.pkl is larger than the first read (a safetensors file's too); and `load` over the network gives the same values as
from the disk. Needs torch (Debian's) to write the large file; exits 77 without nginx or torch.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from nginx import Nginx  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()

try:
    import torch
except ImportError:
    print("SKIP: no torch for this python (it writes the large torch file)")
    sys.exit(77)


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=300)


def hashes(*args):
    out = run("load", *args, "--json", "--sha256")
    return [(t["name"], t["sha256"]) for t in json.loads(out.stdout)["tensors"]] if out.returncode == 0 else out.stderr


root = tempfile.mkdtemp(prefix="ringload-formats-http-")
files = ["shared_storage_views.pt", "many_storages.pt", "handmade_torch27_layout.pt", "handmade_big_endian.pt"]
for name in files:
    shutil.copy(os.path.join(DATA, "torch", name), root)
# A larger checkpoint: 3000 tensors make a data.pkl of ~200 KB, past the first (64 KiB) read.
generator = torch.Generator().manual_seed(3)
state = {f"layers.{i}.w": torch.randn(64 + i % 7, generator=generator) for i in range(3000)}
state["embed"] = torch.randn(2048, 1024, generator=generator)
torch.save(state, os.path.join(root, "large_state.pt"))
files.append("large_state.pt")
try:
    from safetensors.torch import save_file
    save_file({k: v for k, v in list(state.items())[:500]}, os.path.join(root, "peer.safetensors"))
    files.append("peer.safetensors")
except ImportError:
    print("no safetensors package: the safetensors file over HTTP is left out")
os.chmod(root, 0o755)  # nginx's workers may run as another user
for name in files:
    os.chmod(os.path.join(root, name), 0o644)
try:
    server = Nginx(root, access_log=True)
except RuntimeError as error:
    print(f"SKIP: {error}")
    sys.exit(77)

with server:
    for name in files:
        local = hashes(os.path.join(root, name))
        for base, flags in ((server.http_url, ["--http-version", "1.1"]), (server.h2c_url, ["--http-version", "2"])):
            url = f"{base}/{name}"
            label = f"{name} {flags[1]}"
            before = len(server.requests())
            info = run("info", url, "--json", *flags)
            checks.check(label + " info", info.returncode == 0, info.stderr)
            index_requests = server.requests()[before:]
            print(f"{label}: index read in {len(index_requests)} requests")
            checks.check(label + " index in at most 3 range requests", 0 < len(index_requests) <= 3,
                         f"{len(index_requests)}: {index_requests}")
            checks.check(label + " all ranged", all(r[1].startswith("bytes=") for r in index_requests),
                         str(index_requests))
            checks.check(label + " values", hashes(url, *flags) == local, name)
shutil.rmtree(root, ignore_errors=True)
sys.exit(checks.finish())
