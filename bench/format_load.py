#!/usr/bin/env python3
"""bench/format_load.py SYSTEM FILE: one load of every tensor to CPU memory from Python, as JSON.

SYSTEM: "ringload" (ringload.load_file, any format), "safetensors" (safetensors.torch.load_file)
or "torch" (torch.load(weights_only=True, map_location="cpu")). The time covers opening and
loading every tensor into memory; torch is imported before the clock starts for all three.
Run by bench/formats_vs_peers.sh, one process per load (cold cache where the caller drops it).
"""
import argparse
import json
import time

parser = argparse.ArgumentParser()
parser.add_argument("system", choices=["ringload", "safetensors", "torch"])
parser.add_argument("file")
args = parser.parse_args()

import torch  # noqa: E402

if args.system == "ringload":
    import ringload

    def load(path):
        return ringload.load_file(path)
elif args.system == "safetensors":
    from safetensors.torch import load_file as load
else:
    def load(path):
        return torch.load(path, map_location="cpu", weights_only=True)

started = time.perf_counter()
tensors = load(args.file)
total = 0
for tensor in tensors.values():
    total += tensor.numel() * tensor.element_size()
    # safetensors' load_file hands out tensors over a private file mapping that faults pages in
    # on first touch: reading one byte of every 4 KiB page makes every system's data resident
    # (for the others it is a cheap pass over memory already there).
    if tensor.numel():
        tensor.reshape(-1).view(torch.uint8)[::4096].sum().item()
seconds = time.perf_counter() - started
print(json.dumps({"system": args.system, "bytes": total, "seconds": seconds, "gb_per_s": total / seconds / 1e9}))
