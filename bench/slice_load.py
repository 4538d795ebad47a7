#!/usr/bin/env python3
"""bench/slice_load.py BUILD_DIR FILE... [--rounds N] [--no-http]

Sliced reads against a whole load (issue #24), side by side in one run: for every FILE (the
3.1 GB demo: gpt2-xl.safetensors, gpt2-xl.tensors, gpt2-xl.pt), from the disk (cold: page
cache dropped, RAM warmed as bench/common.sh does) and over HTTP/1.1 from nginx on 127.0.0.1
(tests/support/nginx.py; the file in the page cache), times

  whole:    every tensor, Deserializer.load
  quarter:  get_slice-style, the first quarter of the rows of every 2-D+ tensor
            (rows [0, n // 4), all columns), all in ONE Deserializer.load_slices call

  columns: tensor-parallel style, the first eighth of the columns of every 2-D+ tensor: one
            run per row, gaps up to 64 KiB read through (the default)
  columns-exact: the same with merge_gap=0: one range per row, only the slices' bytes read

and reports bytes read / (the slices' bytes + one slot per tensor), which must be <= 1 for the
quarter (the issue's bound), and bytes read / the slices' bytes. Prints a table and JSON lines.

    .venv/bin/python bench/slice_load.py build/release /work/benchdata/gpt2-xl.safetensors \\
        /work/benchdata/gpt2-xl.tensors
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("build")
parser.add_argument("files", nargs="+")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--no-http", action="store_true")
args = parser.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.realpath(args.build), "bindings", "python"))
sys.path.insert(0, os.path.join(here, "..", "tests", "support"))
from ringload import _ringload  # noqa: E402

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1}
warm = os.path.join(os.path.realpath(args.build), "bench", "ringload-warm-ram")
can_drop = os.access("/proc/sys/vm/drop_caches", os.W_OK)


def prepare(size, cold):
    if cold and can_drop:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    if os.path.exists(warm):
        subprocess.run([warm, str(size + (512 << 20))], check=True, capture_output=True)


def quarter_requests(rows):
    requests, needed = [], 0
    for row in rows:
        shape = row["shape"]
        if len(shape) < 2:
            continue
        ranges = [(0, shape[0] // 4)] + [(0, n) for n in shape[1:]]
        requests.append((row["index"], ranges))
        needed += math.prod(b - a for a, b in ranges) * ITEMSIZE[row["dtype"]]
    return requests, needed


def column_requests(rows):
    """Tensor-parallel style: the first eighth of the columns (dimension 1) of every 2-D+ tensor."""
    requests, needed = [], 0
    for row in rows:
        shape = row["shape"]
        if len(shape) < 2:
            continue
        ranges = [(0, shape[0]), (0, shape[1] // 8)] + [(0, n) for n in shape[2:]]
        requests.append((row["index"], ranges))
        needed += math.prod(b - a for a, b in ranges) * ITEMSIZE[row["dtype"]]
    return requests, needed


def one(uri, kind, slot, size, cold, http):
    prepare(size, cold)
    network = {"http_version": "1.1"} if http else {}
    started = time.perf_counter()
    engine = _ringload.Deserializer(uri, **network)
    rows = engine.tensors()
    if kind == "whole":
        loaded = engine.load([r["index"] for r in rows], slot_size=slot)
        needed, tensors = loaded.bytes, len(rows)
    else:
        requests, needed = (quarter_requests if kind == "quarter" else column_requests)(rows)
        loaded = engine.load_slices(requests, slot_size=slot, merge_gap=0 if kind == "columns-exact" else None)
        tensors = len(requests)
    seconds = time.perf_counter() - started
    engine.close()
    return {"seconds": seconds, "bytes_read": loaded.bytes_read, "needed": needed, "tensors": tensors}


def run_source(label, uri, size, slot, cold, http, results):
    rounds = {"whole": [], "quarter": [], "columns": [], "columns-exact": []}
    for _ in range(args.rounds):
        for kind in rounds:  # interleaved, so all see the same machine
            rounds[kind].append(one(uri, kind, slot, size, cold, http))
    for kind, runs in rounds.items():
        r = runs[0]
        bound = r["needed"] + slot * r["tensors"]
        row = {"source": label, "kind": kind, "seconds_median": statistics.median(x["seconds"] for x in runs),
               "seconds": [round(x["seconds"], 3) for x in runs], "bytes_read": r["bytes_read"],
               "needed_bytes": r["needed"], "tensors": r["tensors"], "slot_bytes": slot,
               "read_over_bound": r["bytes_read"] / bound, "read_over_needed": r["bytes_read"] / max(r["needed"], 1)}
        results.append(row)
        print(json.dumps(row), flush=True)


results = []
for path in args.files:
    path = os.path.realpath(path)
    size = os.path.getsize(path)
    name = os.path.basename(path)
    run_source(f"{name} file (cold)", path, size, 4 << 20, True, False, results)
    if args.no_http:
        continue
    from nginx import Nginx
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # served from the page cache
    with Nginx(os.path.dirname(path)) as server:
        run_source(f"{name} http/1.1 (cached)", f"{server.http_url}/{name}", size, 8 << 20, False, True, results)

print()
print(f"{'source':<42} {'kind':<8} {'s (median)':>10} {'GB read':>8} {'read/bound':>10} {'read/needed':>11}")
for r in results:
    print(f"{r['source']:<42} {r['kind']:<8} {r['seconds_median']:>10.3f} {r['bytes_read'] / 1e9:>8.3f} "
          f"{r['read_over_bound']:>10.3f} {r['read_over_needed']:>11.3f}")
bad = [r for r in results if r["kind"] == "quarter" and r["read_over_bound"] > 1]
if bad:
    sys.exit(f"quarter slices read more than the quarter plus one slot per tensor: {bad}")
