#!/usr/bin/env python3
"""bench/gpu_python_load.py FILE [--runs N] [--cold]: safetensors' own load to cuda:0 against
ringload's, from Python, as a user of either calls it.

Each load runs in a fresh process (one JSON line per run), in rotation, so neither system
inherits the other's warm state. The clock starts after torch has made its CUDA context (both
systems share it) and stops after torch.cuda.synchronize(), so it covers opening the file,
reading it and every byte on the GPU. --cold drops the page cache before every run (root).

    ringload:       ringload.load_file(FILE, device="cuda:0")
    ringload_stream: every tensor of ringload.stream_tensors(FILE, device="cuda:0")
    safetensors:    safetensors.torch.load_file(FILE, device="cuda:0")

Prints per system the median seconds, GB/s, and the ratio safetensors / ringload, plus the
peak of torch's allocator (ringload's memory is its own, outside torch's allocator).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SYSTEMS = ("ringload", "ringload_stream", "safetensors")


def one_load(system, file):
    import torch
    torch.zeros(1, device="cuda:0")  # the CUDA context, outside the clock
    torch.cuda.synchronize()
    started = time.perf_counter()
    if system == "safetensors":
        import safetensors.torch
        tensors = safetensors.torch.load_file(file, device="cuda:0")
    elif system == "ringload":
        import ringload
        tensors = ringload.load_file(file, device="cuda:0")
    else:
        import ringload
        tensors = dict(ringload.stream_tensors(file, device="cuda:0"))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    on_gpu = all(t.device.type == "cuda" for t in tensors.values())
    print(json.dumps({"system": system, "seconds": seconds, "bytes": size, "on_gpu": on_gpu,
                      "torch_peak_mib": torch.cuda.max_memory_allocated(0) / 2**20}))


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as caches:
        caches.write("3\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--one", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one_load(args.one, args.file)
    if not args.cold:
        with open(args.file, "rb") as warm:
            while warm.read(64 << 20):
                pass
    results = {system: [] for system in SYSTEMS}
    for _ in range(args.runs):
        for system in SYSTEMS:
            if args.cold:
                drop_caches()
            line = subprocess.run([sys.executable, __file__, args.file, "--one", system], check=True,
                                  capture_output=True, text=True).stdout.strip().splitlines()[-1]
            row = json.loads(line)
            results[system].append(row)
            print(line, flush=True)
    median = {s: statistics.median(r["seconds"] for r in rows) for s, rows in results.items()}
    size = results["ringload"][0]["bytes"]
    cache = "cold" if args.cold else "hot"
    print(f"\n{os.path.basename(args.file)}, {size / 1e9:.2f} GB, {cache} cache, medians of {args.runs}:")
    for system in SYSTEMS:
        print(f"  {system:16s} {median[system]:.3f} s  {size / median[system] / 1e9:6.2f} GB/s  "
              f"torch allocator peak {results[system][0]['torch_peak_mib']:.0f} MiB")
    print(f"  safetensors / ringload: {median['safetensors'] / median['ringload']:.2f}x")


if __name__ == "__main__":
    main()
