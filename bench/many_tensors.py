#!/usr/bin/env python3
"""bench/many_tensors.py [--ringload CLI] [--counts 20000,100000,...] [--work DIR]: many tiny tensors.

Run with .venv/bin/python and PYTHONPATH=build/release/bindings/python (a release build: a
debug one is several times slower). For each count N it makes a safetensors file of N one-byte
tensors (header written here with json, names of a mixture-of-experts shape), converts it with
`ringload convert` (ringload's own writers) to torch zip and tensorizer, and reports, side by
side in one run:

  * at the smallest N: ringload.load_file against safetensors.torch.load_file (safetensors
    file) and torch.load (torch zip file), each the best of --repeats interleaved runs, and the
    ratios;
  * per format and N: `ringload info FILE > /dev/null` and `ringload load FILE` wall time, the
    time per tensor, and how it grows against N (linear: the per-tensor time stays flat).

Files are made once in --work and kept for later runs. Warm page cache: this is about CPU
per tensor, not about the disk.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--ringload", default=os.path.join(os.path.dirname(__file__), "..", "build", "release",
                                                       "bindings", "cli", "ringload"))
parser.add_argument("--counts", default="20000,100000,300000,1000000")
parser.add_argument("--work", default="/tmp/ringload-many-tensors")
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--formats", default="safetensors,pt,tensors", help="for the info/load scaling")
args = parser.parse_args()
counts = [int(n) for n in args.counts.split(",")]
formats = args.formats.split(",")
os.makedirs(args.work, exist_ok=True)


def make_files(n):
    """{extension: path} of n one-byte tensors in each format."""
    base = os.path.join(args.work, f"many{n}")
    source = base + ".safetensors"
    if not os.path.exists(source):
        names = [f"model.layers.{i // 64}.mlp.experts.{i % 64}.w" for i in range(n)]
        header = json.dumps({name: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]}
                             for i, name in enumerate(names)}, separators=(",", ":")).encode()
        header += b" " * (-(8 + len(header)) % 8)
        with open(source + ".part", "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + bytes(i % 251 for i in range(n)))
        os.rename(source + ".part", source)
    paths = {"safetensors": source}
    for extension in ("pt", "tensors"):
        path = f"{base}.{extension}"
        if not os.path.exists(path):
            subprocess.run([args.ringload, "convert", source, path], check=True, capture_output=True)
        paths[extension] = path
    return paths


def best_of(function):
    times = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def cli_seconds(*command):
    def run():
        subprocess.run([args.ringload, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return best_of(run)


def python_loads(paths):
    import ringload
    import safetensors.torch
    import torch
    n = counts[0]
    runs = {
        "ringload.load_file(.safetensors)": lambda: ringload.load_file(paths["safetensors"]),
        "safetensors.torch.load_file": lambda: safetensors.torch.load_file(paths["safetensors"]),
        "ringload.load_file(.pt)": lambda: ringload.load_file(paths["pt"]),
        "torch.load(.pt)": lambda: torch.load(paths["pt"]),
        "ringload.load_file(.tensors)": lambda: ringload.load_file(paths["tensors"]),
    }
    best = {name: float("inf") for name in runs}
    for _ in range(args.repeats):  # interleaved: a busy machine slows every system alike
        for name, run in runs.items():
            started = time.perf_counter()
            loaded = run()
            best[name] = min(best[name], time.perf_counter() - started)
            assert len(loaded) == n, (name, len(loaded))
    print(f"\n{n} one-byte tensors into Python (best of {args.repeats}, warm cache)")
    for name, seconds in best.items():
        print(f"  {name:36s} {seconds:8.3f} s  {1e6 * seconds / n:6.1f} us/tensor")
    print(f"  ringload / safetensors: {best['ringload.load_file(.safetensors)'] / best['safetensors.torch.load_file']:.2f}"
          f"   ringload / torch.load: {best['ringload.load_file(.pt)'] / best['torch.load(.pt)']:.2f}")


def scaling(all_paths):
    print(f"\n`ringload info` and `ringload load` per format (best of {args.repeats}, warm cache)")
    print(f"  {'format':12s} {'N':>9s} {'info s':>8s} {'us/tensor':>10s} {'load s':>8s} {'us/tensor':>10s}")
    for extension in formats:
        first = None
        for n in counts:
            path = all_paths[n][extension]
            info = cli_seconds("info", path)
            load = cli_seconds("load", path)
            first = first or (n, info)
            print(f"  {extension:12s} {n:9d} {info:8.3f} {1e6 * info / n:10.2f} {load:8.3f} {1e6 * load / n:10.2f}"
                  f"   info x{info / first[1]:.1f} for N x{n / first[0]:.0f}")


all_paths = {n: make_files(n) for n in counts}
python_loads(all_paths[counts[0]])
scaling(all_paths)
