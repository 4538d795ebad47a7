#!/usr/bin/env python3
"""bench/signed_load.py: a signed model loaded from a cold page cache (issue #40), in one run:

    ringload load DIR --signature S --public-key P           the weights verified in their own read
    model_signing verify key DIR ... ; safetensors load_file  what a careful user runs today
    ringload load DIR                                         unverified, the same files
    ringload verify DIR --signature S --public-key P          the check alone (no load)

and the two limits of a verified load: the disk (fio, O_DIRECT) and the cores' SHA-256 (hashlib
on one core times the cores, and hashlib on every core while fio reads the shards: the issue's
"cores x SHA-256 per core while reading"). Every timed step starts with the model's files out of
the page cache (POSIX_FADV_DONTNEED, checked; the programs stay warm, as in a running server) and
with RAM warmed the same way (`ringload-warm-ram`, bench/warm_ram.cpp, touches the model's size
plus 1 GiB of fresh memory): this VM hands freed memory back to its host, and a load whose
memory comes back from the host first pays its host's faults (0.2 to 1 s of extra system time
at random), which says nothing about the loaders.

    sudo .venv/bin/python bench/signed_load.py [--dir D] [--gb 3.6] [--shards 4] [--runs 3]

The model is made once (random float16 tensors of 64 MiB in safetensors shards) and signed with
`ringload sign` (a P-256 key), which `model_signing verify key` accepts (tests/bindings/
model_signing_test.py). Needs build/release (its `ringload` and `ringload-warm-ram`, or
--ringload for the first), .venv-signing and fio.
"""
import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from page_cache import evict_files  # noqa: E402

SAFETENSORS_LOAD = ("import sys, safetensors.torch\n"
                    "for path in sys.argv[1:]:\n"
                    "    safetensors.torch.load_file(path)\n")


def make_model(folder: str, total_gb: float, shards: int, ringload: str) -> None:
    import torch
    from safetensors.torch import save_file
    os.makedirs(folder, exist_ok=True)
    per_shard = int(total_gb * 1e9 / shards)
    tensor_bytes = 64 << 20
    for shard in range(shards):
        tensors = {f"layers.{shard}.{k}.weight": torch.randn(tensor_bytes // 2 // 4096, 4096).half()
                   for k in range(per_shard // tensor_bytes)}
        save_file(tensors, os.path.join(folder, f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as file:
        json.dump({"model_type": "bench"}, file)
    keys = folder + "-keys"
    os.makedirs(keys, exist_ok=True)
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", keys + "/ec.pem"],
                   check=True)
    subprocess.run(["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", keys + "/ec.pem", "-out", keys + "/key.pem"],
                   check=True)
    subprocess.run(["openssl", "ec", "-in", keys + "/ec.pem", "-pubout", "-out", keys + "/pub.pem"], check=True,
                   capture_output=True)
    subprocess.run([ringload, "sign", folder, "--sign-key", keys + "/key.pem", "--signature", folder + ".sig"],
                   check=True)


CPU_SECONDS = {}  # the last timed command's user + sys seconds, by its first word
STDOUT = {}  # the last timed command's output, by the command


def timed(*command) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(list(command), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS[command] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {out.stderr}")
    STDOUT[command] = out.stdout
    return seconds


WARM_RAM = os.path.join(ROOT, "build/release/bench/ringload-warm-ram")


def cold(files) -> None:
    """The model's files out of the page cache, and fresh RAM warmed for the next program."""
    evict_files(files)
    total = sum(os.path.getsize(f) for f in files)
    subprocess.run([WARM_RAM, str(total + (1 << 30))], check=True, timeout=120)


def fio_gb_per_s(paths) -> float:
    """fio's O_DIRECT read of every shard (4 MiB reads, 32 in flight, the files in turn): as much
    in flight as two of ringload's loads side by side; in huge-page registered buffers, without
    which fio reads this VM's disk at half speed (bench/common.sh)."""
    out = subprocess.run(["fio", "--name=r", "--filename=" + ":".join(p.replace(":", "\\:") for p in paths),
                          "--rw=read", "--bs=4M", "--iodepth=32", "--ioengine=io_uring", "--direct=1",
                          "--output-format=json", "--fixedbufs", "--iomem_align=2M"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1"))  # as bench/common.sh
    job = json.loads(out.stdout)["jobs"][0]["read"]
    return job["io_bytes"] / (job["runtime"] / 1000) / 1e9


def sha256_gb_per_s() -> float:
    block = os.urandom(64 << 20)
    started = time.perf_counter()
    for _ in range(8):
        hashlib.sha256(block).digest()
    return 8 * len(block) / (time.perf_counter() - started) / 1e9


def _hash_for(seconds: float) -> int:
    """Bytes one process hashes (SHA-256, 64 MiB at a time) in `seconds`."""
    block = os.urandom(64 << 20)
    done, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        hashlib.sha256(block).digest()
        done += len(block)
    return done


def sha256_while_reading(paths, cores: int, seconds: float = 4.0) -> float:
    """The cores' SHA-256 rate while the disk is being read (the issue's "cores x SHA-256 per core
    while reading"): one hashing process per core beside fio's O_DIRECT read of the shards (as
    fio_gb_per_s, time-based), in GB/s for all cores together."""
    import multiprocessing
    fio = subprocess.Popen(["fio", "--name=r", "--filename=" + ":".join(p.replace(":", "\\:") for p in paths),
                            "--rw=read", "--bs=4M", "--iodepth=32", "--ioengine=io_uring", "--direct=1",
                            "--time_based", f"--runtime={seconds + 1:.0f}", "--fixedbufs", "--iomem_align=2M",
                            "--output-format=json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1"))
    time.sleep(0.5)
    with multiprocessing.Pool(cores) as pool:
        hashed = sum(pool.map(_hash_for, [seconds] * cores))
    fio.wait()
    return hashed / seconds / 1e9


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/var/tmp/ringload-signed-bench/model")
    parser.add_argument("--gb", type=float, default=3.6)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ringload", default=os.path.join(ROOT, "build/release/bindings/cli/ringload"))
    args = parser.parse_args()
    folder = args.dir
    if not os.path.isdir(folder):
        make_model(folder, args.gb, args.shards, args.ringload)
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".safetensors"))
    total = sum(os.path.getsize(f) for f in files)
    signature, public_key = folder + ".sig", folder + "-keys/pub.pem"
    model_signing = os.path.join(ROOT, ".venv-signing/bin/model_signing")
    python = os.path.join(ROOT, ".venv/bin/python")
    times = {"verified": [], "model_signing+safetensors": [], "model_signing": [], "unverified": [],
             "ringload verify": []}
    cpu = {"verified": [], "unverified": []}
    own = []  # the verified load's own seconds (--json): the command's work, without exec and exit
    disks = []  # fio's rate just before each run's loads: the disk drifts (3.56-3.80 GB/s in an hour)
    for run in range(args.runs):
        cold(files)
        disks.append(fio_gb_per_s(files))
        cold(files)
        verified = (args.ringload, "load", folder, "--signature", signature, "--public-key", public_key, "--json")
        times["verified"].append(timed(*verified))
        own.append(json.loads(STDOUT[verified])["seconds"])
        cpu["verified"].append(CPU_SECONDS[verified])
        cold(files)
        verify = timed(model_signing, "verify", "key", folder, "--signature", signature, "--public_key", public_key)
        load = timed(python, "-c", SAFETENSORS_LOAD, *files)
        times["model_signing"].append(verify)
        times["model_signing+safetensors"].append(verify + load)
        cold(files)
        times["unverified"].append(timed(args.ringload, "load", folder))
        cpu["unverified"].append(CPU_SECONDS[(args.ringload, "load", folder)])
        cold(files)
        times["ringload verify"].append(timed(args.ringload, "verify", folder, "--signature", signature,
                                              "--public-key", public_key))
        print(f"run {run + 1}: disk {disks[-1]:.2f} GB/s, " +
              ", ".join(f"{name} {values[-1]:.2f} s" for name, values in times.items()) +
              f" (verified's own {own[-1]:.2f} s)", flush=True)
    disk = statistics.median(disks)
    sha = sha256_gb_per_s()
    cores = len(os.sched_getaffinity(0))
    cold(files)
    sha_reading = sha256_while_reading(files, cores)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\n{len(files)} shards, {total / 1e9:.2f} GB, cold page cache, medians of {args.runs} runs:")
    for name, values in times.items():
        print(f"  {name:28s} {median[name]:6.2f} s  [{min(values):.2f}-{max(values):.2f}]  "
              f"{total / median[name] / 1e9:.2f} GB/s")
    print(f"  disk (fio O_DIRECT, every shard, before each run) {disk:.2f} GB/s [{min(disks):.2f}-{max(disks):.2f}]; "
          f"SHA-256 {sha:.2f} GB/s per core x {cores} cores; on {cores} cores while fio reads the shards "
          f"{sha_reading:.2f} GB/s")
    for name, values in cpu.items():
        used = statistics.median(values)
        print(f"  {name} load's CPU: {used:.2f} s (user + sys), {used / cores:.2f} s of wall time on {cores} cores "
              f"at best: {median[name] * cores / used:.2f}x that")
    print(f"verified load vs model_signing verify + safetensors load: "
          f"{median['model_signing+safetensors'] / median['verified']:.2f}x faster")
    print(f"verified load vs unverified: {median['unverified'] / median['verified']:.2f} of its speed")
    print(f"ringload verify vs model_signing verify: {median['model_signing'] / median['ringload verify']:.2f}x "
          f"faster; its rate {total / median['ringload verify'] / 1e9 / min(disk, sha_reading):.2f} of "
          f"min(disk, cores x SHA-256 while reading)")
    # The limit, min(disk, cores x SHA-256 while reading), with each run's own disk rate.
    limits = [min(d, sha_reading) for d in disks]
    bound = "disk" if statistics.median(disks) <= sha_reading else "SHA-256"
    wall_ratios = [total / t / 1e9 / limit for t, limit in zip(times["verified"], limits)]
    own_ratios = [total / t / 1e9 / limit for t, limit in zip(own, limits)]
    # fio's rate is its I/O time alone (its start, buffers and exit not counted): the load's own
    # time (signature check, opens, memory and all, without the process's exec and exit) is the
    # like for like; the process's wall time is shown too.
    print(f"verified throughput / min(disk, cores x SHA-256 while reading) [{bound}], each run against the "
          f"disk rate fio measured just before it: the load's own time (--json seconds, as fio counts its I/O "
          f"alone) {statistics.median(own_ratios):.2f} [{min(own_ratios):.2f}-{max(own_ratios):.2f}]; "
          f"the process's wall time {statistics.median(wall_ratios):.2f} "
          f"[{min(wall_ratios):.2f}-{max(wall_ratios):.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
