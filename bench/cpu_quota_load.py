#!/usr/bin/env python3
"""bench/cpu_quota_load.py: a load inside a one-CPU CFS quota (a Kubernetes CPU limit), cold (issue #52).

    sudo PYTHONPATH=build/release/bindings/python .venv-vllm/bin/python bench/cpu_quota_load.py [--runs 5]

A safetensors file (--file, default the vLLM bench's 1.36 GB llama-1b model.safetensors, else
one of --gb written here) is loaded in a fresh process per load, the page cache dropped before
each (the whole page cache: evicting one file's pages now and then left one), timed from the call until every page of
every tensor was read (a byte of each 4 KiB page summed: safetensors' load_file maps the file
and reads nothing until touched), RAM warmed before each (build/release's ringload-warm-ram).
The loads alternate round by round:

    ringload in quota     ringload.load_file inside a cpu cgroup limited to one CPU (every core visible)
    safetensors in quota  safetensors.torch.load_file there
    ringload taskset      ringload.load_file bound to one core (taskset -c 0), no quota

Prints each load's seconds, then medians and spreads, and the ratios the issue asks for:
safetensors' median / ringload's in the quota (>= 1.0), ringload's slowest in the quota /
safetensors' median (<= 1.25), and ringload in the quota / under taskset.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from page_cache import prepare_page_cache  # noqa: E402

CHILD = r"""
import json, sys, time
loader, path = sys.argv[1:3]
import torch
if loader == "ringload":
    import ringload
    load = ringload.load_file
else:
    from safetensors.torch import load_file as load
started = time.perf_counter()
tensors = load(path)
touched = 0
for tensor in tensors.values():  # one byte of every page: the mapped pages read in
    flat = tensor.reshape(-1).view(torch.uint8)
    touched += int(flat[::4096].sum())
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "touched": touched}))
"""


def cpu_cgroup(quota_us: int, period_us: int = 100000) -> str:
    """A cpu cgroup (v1, or v2 where the cpu controller is there) limited to quota/period CPUs."""
    name = f"ringload-bench-{uuid.uuid4().hex[:8]}"
    if os.path.isfile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
        folder = os.path.join("/sys/fs/cgroup/cpu", name)
        os.mkdir(folder)
        open(os.path.join(folder, "cpu.cfs_period_us"), "w").write(str(period_us))
        open(os.path.join(folder, "cpu.cfs_quota_us"), "w").write(str(quota_us))
    else:
        folder = os.path.join("/sys/fs/cgroup", name)
        os.mkdir(folder)
        open(os.path.join(folder, "cpu.max"), "w").write(f"{quota_us} {period_us}")
    return folder


WARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "release", "bench", "ringload-warm-ram")


def run(loader: str, path: str, cgroup=None, taskset=None, package=None) -> dict:
    prepare_page_cache(path, "cold")
    # This VM hands freed memory back to its host: a load whose memory comes back from the host
    # pays its faults (0.2 to 2 s at random). Every load finds RAM touched the same way first.
    subprocess.run([WARM, str(os.path.getsize(path) + (1 << 30))], check=True, capture_output=True)
    command = ([*taskset] if taskset else []) + [sys.executable, "-c", CHILD, loader, path]
    if cgroup:  # a shell moves itself into the cgroup and execs the load: nothing runs between fork and exec
        command = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(cgroup, "cgroup.procs"), *command]
    env = dict(os.environ, PYTHONPATH=package) if package else None
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        raise SystemExit(f"cpu_quota_load: {loader} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_file(args) -> str:
    if args.file:
        return args.file
    default = "/tmp/ringload-vllm-bench/llama-1b/model.safetensors"
    if os.path.exists(default):
        return default
    path = os.path.join(args.work, "model.safetensors")
    if not os.path.exists(path):
        import torch
        from safetensors.torch import save_file
        os.makedirs(args.work, exist_ok=True)
        count = int(args.gb * 1e9 // (64 << 20))
        save_file({f"t{k}": torch.randn(16 << 20) for k in range(count)}, path)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--file", default="")
    parser.add_argument("--work", default="/var/tmp/ringload-cpu-quota-bench")
    parser.add_argument("--gb", type=float, default=1.3)
    parser.add_argument("--compare", default="",
                        help="another build's bindings/python: its ringload in the quota too (e.g. before a change)")
    args = parser.parse_args()
    path = make_file(args)
    cgroup = cpu_cgroup(100000)
    configs = {"ringload in quota": ("ringload", cgroup, None, None),
               "safetensors in quota": ("safetensors", cgroup, None, None),
               "ringload taskset": ("ringload", None, ["taskset", "-c", "0"], None)}
    if args.compare:
        configs["compared build in quota"] = ("ringload", cgroup, None, args.compare)
    times = {name: [] for name in configs}
    touched = None
    try:
        for round_ in range(args.runs):
            order = list(configs) if round_ % 2 == 0 else list(configs)[::-1]
            for name in order:
                loader, group, taskset, package = configs[name]
                result = run(loader, path, group, taskset, package)
                if touched is not None and result["touched"] != touched:
                    raise SystemExit(f"cpu_quota_load: {name} read other bytes")
                touched = result["touched"]
                times[name].append(result["seconds"])
                print(f"round {round_ + 1} {name:22} {result['seconds']:.3f} s", flush=True)
    finally:
        os.rmdir(cgroup)
    size = os.path.getsize(path)
    print(f"\n{path}: {size / 1e9:.2f} GB, cold page cache, one process per load, {args.runs} runs each, "
          f"{len(os.sched_getaffinity(0))} cores visible\n")
    print("| load | seconds, median [min-max] | GB/s |")
    print("|---|---|---|")
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"| {name} | {median[name]:.3f} [{min(values):.3f}-{max(values):.3f}] | {size / median[name] / 1e9:.2f} |")
    ours, theirs = times["ringload in quota"], median["safetensors in quota"]
    print(f"\nin the quota: ringload {theirs / median['ringload in quota']:.2f}x safetensors' speed (medians); "
          f"ringload's slowest {max(ours) / theirs:.2f}x safetensors' median; ringload in the quota / under "
          f"taskset -c 0: {median['ringload in quota'] / median['ringload taskset']:.2f}")


if __name__ == "__main__":
    main()
