#!/usr/bin/env python3
"""bench/python_load.py SYSTEM FILE [--verify] [--key-file F]: one load to CPU from Python, as JSON.

SYSTEM is "ringload" (ringload.TensorDeserializer) or "tensorizer" (tensorizer's, its default
readers). Both materialize every tensor on the CPU; the time covers opening and loading.
Run by bench/python_vs_peers.sh, one process per load (cold cache where the caller drops it).
"""
import argparse
import json
import time

parser = argparse.ArgumentParser()
parser.add_argument("system", choices=["ringload", "tensorizer"])
parser.add_argument("file")
parser.add_argument("--verify", action="store_true")
parser.add_argument("--key-file")
args = parser.parse_args()
key = open(args.key_file, "rb").read() if args.key_file else None

import torch  # noqa: F401,E402 (imported before the clock starts, for both: tensorizer imports it anyway)

if args.system == "ringload":
    import ringload as system
else:
    import tensorizer as system
encryption = system.DecryptionParams.from_key(key) if key else None

started = time.perf_counter()
deserializer = system.TensorDeserializer(args.file, device="cpu", verify_hash=args.verify, encryption=encryption)
total = 0
for tensor in deserializer.values():
    total += tensor.numel() * tensor.element_size()
seconds = time.perf_counter() - started
deserializer.close()
print(json.dumps({"system": args.system, "bytes": total, "seconds": seconds, "gb_per_s": total / seconds / 1e9}))
