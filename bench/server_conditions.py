#!/usr/bin/env python3
"""bench/server_conditions.py [--file F] [--runs N] [--conditions ...]: a load in a server's conditions.

Inference servers do not give a loader the whole machine: vLLM's CPU worker is bound to one
core, Kubernetes limits set a CPU quota, other processes share the cores, and the memory a
load writes into has often never been touched (on VMs that back guest RAM lazily, a first
touch costs a trip to the host). This runs ringload.load_file against safetensors'
load_file on one safetensors file, cold page cache, in each of those conditions, each load
in a fresh process, the loaders alternating, and times each until every page of every
tensor has been read (safetensors hands out lazily mapped tensors: reading them is part of
its load).

Run with .venv/bin/python and PYTHONPATH=build/release/bindings/python, as root (it drops
the page cache and makes a cgroup for the quota):

    PYTHONPATH=build/release/bindings/python .venv/bin/python bench/server_conditions.py

Conditions:
  two-cores   the whole machine (2 cores here)
  one-core    taskset -c 0
  quota       a cgroup (v1 cpu or v2 cpu.max) limited to one CPU's time over all cores
  busy        both cores shared with a busy-looping process per core
  warm        two cores, the load's memory touched once and freed just before (the others
              are cold: nothing touched first)

Beside the two loaders, "disk" is fio reading the same file with O_DIRECT in the same
condition: the floor neither loader can go under with a cold page cache.

Prints one line per run and a table: median [min-max] per loader, safetensors' median over
ringload's, and whether every ringload run beat safetensors' median (the goal of issue #25:
a ratio of at least 1.3 in every condition, no ringload run slower than safetensors' median).
Default file: a 1.35 GB Llama-shaped float32 safetensors made with `ringload bench model
--shape llama-1b` in --work.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONDITIONS = ["two-cores", "one-core", "quota", "busy", "warm"]
LOADERS = ["ringload", "safetensors", "disk"]

# The child: one cold load, timed until every page has been read; prints the seconds.
CHILD = r"""
import os, sys, time, mmap
loader, path, warm_bytes, placement = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
import torch
if warm_bytes:
    block = mmap.mmap(-1, warm_bytes)
    for at in range(0, warm_bytes, 4096):
        block[at] = 1
    block.close()
os.sync()
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("3\n")
start = time.perf_counter()
if loader == "ringload":
    import ringload
    tensors = ringload.load_file(path, placement=placement)
else:
    import safetensors.torch
    tensors = safetensors.torch.load_file(path)
for tensor in tensors.values():
    if tensor.numel():
        tensor.reshape(-1).view(torch.uint8)[::4096].sum()
print(time.perf_counter() - start)
"""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", help="a safetensors file (default: the llama-1b model in --work)")
    parser.add_argument("--work", default="/tmp/ringload-server-conditions")
    parser.add_argument("--runs", type=int, default=5, help="runs per loader and condition")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--ringload", default=os.path.join(ROOT, "build", "release", "bindings", "cli", "ringload"))
    parser.add_argument("--placement", default="auto", choices=["auto", "arena", "mapped"],
                        help="ringload's placement (ringload.load_file's placement=)")
    parser.add_argument("--json", help="write the runs here")
    return parser.parse_args()


def default_file(args):
    path = os.path.join(args.work, "llama-1b.safetensors")
    if not os.path.exists(path):
        os.makedirs(args.work, exist_ok=True)
        subprocess.run([args.ringload, "bench", "model", "--shape", "llama-1b", "--dtype", "float32", "--to",
                        "safetensors", path], check=True)
    return path


class Quota:
    """A cgroup holding one CPU's time (period 100 ms, quota 100 ms), v1 or v2."""

    def __init__(self):
        v1 = "/sys/fs/cgroup/cpu"
        if os.path.isfile(os.path.join(v1, "cpu.cfs_quota_us")):
            self.path = os.path.join(v1, "ringload-bench")
            os.makedirs(self.path, exist_ok=True)
            self._write("cpu.cfs_period_us", "100000")
            self._write("cpu.cfs_quota_us", "100000")
        else:
            self.path = "/sys/fs/cgroup/ringload-bench"
            os.makedirs(self.path, exist_ok=True)
            self._write("cpu.max", "100000 100000")

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def enter(self):
        """For preexec_fn: moves the child into the cgroup before it runs."""
        self._write("cgroup.procs", str(os.getpid()))

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


# The disk's floor in the same condition: fio reading the file with O_DIRECT (no page cache,
# no fresh memory to fault in beyond its own buffers), 4 MiB requests 16 deep, cold cache.
FIO = ["fio", "--name=disk", "--rw=read", "--bs=4M", "--iodepth=16", "--ioengine=io_uring", "--direct=1",
       "--readonly", "--output-format=json"]


def parse_fio(stdout):
    job = json.loads(stdout[stdout.index("{"):])["jobs"][0]["read"]
    return job["runtime"] / 1000.0


def run_one(loader, path, condition, quota, file_bytes, placement):
    command = [sys.executable, "-c", CHILD, loader, path, str(file_bytes if condition == "warm" else 0), placement]
    if loader == "disk":
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        command = FIO + [f"--filename={path}"]
    preexec = None
    if condition == "one-core":
        command = ["taskset", "-c", "0"] + command
    elif condition == "quota":
        preexec = quota.enter
    busy = []
    if condition == "busy":
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
        time.sleep(0.5)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, preexec_fn=preexec)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    if done.returncode != 0:
        raise SystemExit(f"{loader} in {condition} failed:\n{done.stderr}")
    if loader == "disk":
        return parse_fio(done.stdout)
    return float(done.stdout.strip().splitlines()[-1])


def main():
    args = parse_args()
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        raise SystemExit("server_conditions: run as root (it drops the page cache before each load)")
    path = args.file or default_file(args)
    file_bytes = os.path.getsize(path)
    conditions = args.conditions.split(",")
    quota = Quota() if "quota" in conditions else None
    runs = {condition: {loader: [] for loader in LOADERS} for condition in conditions}
    try:
        for condition in conditions:
            for round_ in range(args.runs):
                order = LOADERS[round_ % len(LOADERS):] + LOADERS[:round_ % len(LOADERS)]
                for loader in order:
                    seconds = run_one(loader, path, condition, quota, file_bytes, args.placement)
                    runs[condition][loader].append(seconds)
                    print(f"{condition:10} {loader:12} {seconds:.3f} s", flush=True)
    finally:
        if quota:
            quota.remove()
    print(f"\n{os.path.basename(path)}, {file_bytes / 1e9:.2f} GB, cold page cache, {args.runs} runs each, "
          f"ringload placement {args.placement}\n")
    print("| condition | ringload s | safetensors s | disk (fio) s | safetensors / ringload | "
          "ringload / disk | safetensors / disk | every ringload run < safetensors median |")
    print("|---|---|---|---|---|---|---|---|")

    def spread(values):
        return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"

    for condition in conditions:
        ours, theirs, disk = (runs[condition][loader] for loader in LOADERS)
        ratio = statistics.median(theirs) / statistics.median(ours)
        every = max(ours) < statistics.median(theirs)
        print(f"| {condition} | {spread(ours)} | {spread(theirs)} | {spread(disk)} | {ratio:.2f} | "
              f"{statistics.median(ours) / statistics.median(disk):.2f} | "
              f"{statistics.median(theirs) / statistics.median(disk):.2f} | {'yes' if every else 'no'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"file": path, "bytes": file_bytes, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
