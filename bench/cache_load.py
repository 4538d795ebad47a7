#!/usr/bin/env python3
"""bench/cache_load.py: the node-local cache (issue #41), in one run, every load from a cold page
cache (root):

    ringload load URL                      the remote file uncached, through a rate-capped nginx
    ringload load URL --cache DIR          the first load: the same, keeping the bytes (DIR emptied)
    ringload load URL --cache DIR          the second load: the entry, one HEAD to the server
    ringload load FILE                     the same bytes from the local file
    ringload load URL --cache /dev/shm/..  the shared-memory tier's second load (with --shm)

    sudo .venv/bin/python bench/cache_load.py [--gb 2.2] [--rate 62500000] [--runs 3] [--shm]

The server is nginx on 127.0.0.1 (tests/support/nginx.py) capped at --rate bytes a second per
connection (8 connections: 4 Gbit/s by default), as a real network would be. The model (one
safetensors file of 64 MiB tensors of random bytes) is made once under --dir, where the cache
lives too (the same disk as the local file). Needs build/release (or --ringload).
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from page_cache import prepare_page_cache  # noqa: E402
from nginx import Nginx  # noqa: E402


def make_model(path: str, total_gb: float) -> None:
    tensor_bytes = 64 << 20
    count = int(total_gb * 1e9) // tensor_bytes
    header = {f"layers.{i}.weight": {"dtype": "F16", "shape": [tensor_bytes // 2 // 4096, 4096],
                                     "data_offsets": [i * tensor_bytes, (i + 1) * tensor_bytes]} for i in range(count)}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as file:
        file.write(struct.pack("<Q", len(text)) + text)
        for _ in range(count):
            file.write(os.urandom(tensor_bytes))
    os.rename(path + ".tmp", path)


def timed(*command) -> float:
    started = time.perf_counter()
    out = subprocess.run(list(command), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {out.stderr}")
    if "cache:" in out.stderr:
        print("  stderr: " + out.stderr.strip())
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/var/tmp/ringload-cache-bench")
    parser.add_argument("--gb", type=float, default=2.2)
    parser.add_argument("--rate", type=int, default=62_500_000, help="bytes a second per connection")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shm", action="store_true", help="also the /dev/shm tier")
    parser.add_argument("--ringload", default=os.path.join(ROOT, "build/release/bindings/cli/ringload"))
    args = parser.parse_args()
    www = os.path.join(args.dir, "www")
    model = os.path.join(www, "model.safetensors")
    if not os.path.exists(model):
        make_model(model, args.gb)
    size = os.path.getsize(model)
    cache = os.path.join(args.dir, "cache")
    shm_cache = "/dev/shm/ringload-cache-bench"
    times = {"uncached": [], "first (fill)": [], "second (cache)": [], "local file": []}
    if args.shm:
        times["second (/dev/shm)"] = []
    with Nginx(www, limit_rate=args.rate) as server:
        url = server.http_url + "/model.safetensors"
        ringload = args.ringload
        for run in range(args.runs):
            prepare_page_cache(model, "cold")
            times["uncached"].append(timed(ringload, "load", url))
            shutil.rmtree(cache, ignore_errors=True)
            prepare_page_cache(model, "cold")
            times["first (fill)"].append(timed(ringload, "load", url, "--cache", cache))
            prepare_page_cache(model, "cold")
            times["second (cache)"].append(timed(ringload, "load", url, "--cache", cache))
            prepare_page_cache(model, "cold")
            times["local file"].append(timed(ringload, "load", model))
            if args.shm:
                shutil.rmtree(shm_cache, ignore_errors=True)
                timed(ringload, "load", url, "--cache", shm_cache)
                prepare_page_cache(model, "cold")
                times["second (/dev/shm)"].append(timed(ringload, "load", url, "--cache", shm_cache))
            print(f"run {run + 1}: " + ", ".join(f"{name} {values[-1]:.2f} s" for name, values in times.items()),
                  flush=True)
    shutil.rmtree(shm_cache, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\n{size / 1e9:.2f} GB, nginx capped at {args.rate * 8 / 1e6:.0f} MB/s (8 connections x "
          f"{args.rate / 1e6:.1f} MB/s), cold page cache, medians of {args.runs} runs:")
    for name, values in times.items():
        print(f"  {name:20s} {median[name]:6.2f} s  [{min(values):.2f}-{max(values):.2f}]  "
              f"{size / median[name] / 1e9:.2f} GB/s")
    print(f"second load (cache) vs the local file: {median['local file'] / median['second (cache)']:.2f} of its speed")
    print(f"first load (fill) vs uncached: {median['first (fill)'] / median['uncached']:.3f} of its time")
    if args.shm:
        print(f"/dev/shm tier vs the disk entry: {median['second (cache)'] / median['second (/dev/shm)']:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
