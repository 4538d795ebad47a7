#!/usr/bin/env python3
"""tests/bench/bench_smoke_test.py RINGLOAD WORK_DIR: the whole `ringload bench` harness on the
tiny model (issue #7): `bench model --shape tiny`, `bench limits` and `bench load` with --json
and --png (and `bench load --device cuda`), checking that every figure is present and positive, or carries the reason it could
not be measured here. Reasons are accepted only where the machine may lack the thing: a GPU, a
server to measure HTTP with, a peer's package. A peer that is installed and fails, fails the
test. WORK_DIR is on a real file system (O_DIRECT: not tmpfs). No root, no network.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ringload, work_root = sys.argv[1:3]
os.makedirs(work_root, exist_ok=True)
work = tempfile.mkdtemp(prefix="bench-smoke-", dir=work_root)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    print("+", " ".join(args), flush=True)
    done = subprocess.run([ringload, *args], capture_output=True, text=True, timeout=300)
    sys.stdout.write(done.stdout)
    sys.stdout.write(done.stderr)
    if done.returncode != 0:
        sys.exit(f"exit status {done.returncode}")
    return done


def positive(row, key):
    return isinstance(row.get(key), (int, float)) and row[key] > 0


try:
    model = os.path.join(work, "tiny.tensors")
    run("bench", "model", "--shape", "tiny", model)
    check(os.path.getsize(model) > 0, "bench model wrote nothing")

    limits_json = os.path.join(work, "limits.json")
    run("bench", "limits", "--dir", work, "--size", str(64 << 20), "--json", limits_json,
        "--png", os.path.join(work, "limits.png"))
    limits = json.load(open(limits_json))
    may_be_missing = ("pinned host-to-device", "pinned device-to-host", "HTTP/1.1", "HTTP/2",
                      "disk buffered cold")
    names = [figure["name"] for figure in limits["figures"]]
    for expected in ("disk O_DIRECT qd1", "disk O_DIRECT qd16", "page cache (buffered hot)", "memcpy 1 core",
                     "crc32 1 core", "sha256 1 core", "xsalsa20-poly1305 1 core", *may_be_missing):
        check(expected in names, f"limits: no figure {expected!r}")
    for kind in ("memcpy", "crc32", "sha256", "xsalsa20-poly1305"):  # on all cores while the disk reads
        check(any(n.startswith(kind + " ") and n.endswith(" cores, disk reading") for n in names),
              f"limits: no figure for {kind} while the disk reads")
    for figure in limits["figures"]:
        if "unavailable" in figure:
            check(figure["name"] in may_be_missing and figure["unavailable"],
                  f"limits: {figure['name']}: {figure['unavailable']}")
        else:
            check(positive(figure, "gb_per_s"), f"limits: {figure['name']} is not positive: {figure}")
    check(os.path.getsize(os.path.join(work, "limits.png")) > 0, "limits: empty PNG")

    load_json = os.path.join(work, "load.json")
    # A --work-dir not there yet is made (it once failed every converted row, each with the same words).
    copies = os.path.join(work, "not-yet", "copies")
    run("bench", "load", model, "--work-dir", copies, "--json", load_json, "--png", os.path.join(work, "load.png"))
    check(os.path.isdir(copies), "load: --work-dir was not made")
    load = json.load(open(load_json))
    check(positive(load["limit"], "gb_per_s"), f"load: limit {load['limit']}")
    systems = {(row["system"], row["format"]): row for row in load["systems"]}
    for system in [("ringload", "tensorizer"), ("ringload", "safetensors"), ("ringload", "torch"),
                   ("tensorizer", "tensorizer"), ("safetensors", "safetensors"), ("torch.load", "torch"),
                   ("runai-model-streamer", "safetensors"), ("fastsafetensors", "safetensors")]:
        check(system in systems, f"load: no row for {system}")
    for (system, fmt), row in systems.items():
        if "unavailable" in row:
            # Only a package that is not installed (or a GPU that is not there) may be missing.
            reason = row["unavailable"]
            check(system != "ringload" and (reason.startswith("not installed") or reason.startswith("no GPU")),
                  f"load: {system} ({fmt}): {reason}")
            continue
        for key in ("gb_per_s", "ratio_to_limit", "seconds", "first_tensor_seconds", "peak_rss_bytes", "bytes"):
            check(positive(row, key), f"load: {system} ({fmt}): {key} is not positive: {row.get(key)}")
        check(row["cache"], f"load: {system} ({fmt}): no cache state")
    byte_counts = {row["bytes"] for row in systems.values() if "bytes" in row}
    check(len(byte_counts) == 1, f"load: the systems loaded different byte counts: {byte_counts}")
    check(os.path.getsize(os.path.join(work, "load.png")) > 0, "load: empty PNG")

    # To a GPU: with one, ringload's rows report the device memory they held (at least the
    # tensors); without one, every row says why instead of a number, ringload's as the peers'
    # (the CLI's "unsupported" reason, not a failure).
    gpu_json = os.path.join(work, "load-cuda.json")
    run("bench", "load", model, "--device", "cuda", "--work-dir", work, "--json", gpu_json)
    for row in json.load(open(gpu_json))["systems"]:
        name = f"load --device cuda: {row['system']} ({row['format']})"
        if "unavailable" in row:
            reason = row["unavailable"]
            if row["system"] == "ringload":
                check(not reason.startswith("failed") and "CUDA" in reason, f"{name}: {reason}")
            else:
                check(reason.startswith("not installed") or reason.startswith("no GPU"), f"{name}: {reason}")
        elif row["system"] == "ringload":
            check(row.get("device_peak_bytes", 0) >= row["bytes"], f"{name}: device peak {row.get('device_peak_bytes')}")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("bench smoke: every figure present and positive, or with its reason")
