#!/usr/bin/env bash
# bench/ab_compare.sh OLD_BUILD NEW_BUILD FILE [ROUNDS]
#
# Two builds of ringload side by side on the same machine, interleaved round by round (these
# VMs are noisy: only figures from one run compare): for a refactor that must not change speed.
# FILE is a tensorizer file (the demo's demo/gpt2-xl.tensors); next to it the script makes, once,
# an encrypted copy, a safetensors copy and a torch copy (with NEW_BUILD's convert). Each
# configuration runs OLD then NEW (then NEW then OLD in the next round, so neither always goes
# first), with the page cache dropped (as root) and RAM warmed before every timed run:
#   load          ringload load FILE                      (cold file, host)
#   verify        ringload load FILE --verify             (CRC32 + SHA-256 of every byte)
#   encrypted     ringload load FILE.enc --key-file K     (XSalsa20-Poly1305)
#   safetensors   ringload load FILE.safetensors
#   torch         ringload load FILE.pt
#   write         ringload-write-bench FILE OUT           (the tensorizer writer from memory)
#   http1.1       ringload load http://127.0.0.1/...      (nginx on loopback, page cache warm)
#   h2c           ringload load h2c URL --http-version 2
# Prints per-round GB/s and, per configuration, the medians and NEW/OLD.
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") file=$(realpath "$3") rounds=${4:-6}
here=$(cd "$(dirname "$0")" && pwd)
size=$(stat -c %s "$file")
warm=$new/bench/ringload-warm-ram
source "$here/common.sh"

dir=$(dirname "$file") base=$(basename "$file" .tensors)
key=$dir/$base.key
[ -f "$key" ] || head -c 32 /dev/urandom > "$key"
[ -f "$dir/$base.enc.tensors" ] || "$new/bindings/cli/ringload" convert "$file" "$dir/$base.enc.tensors" --encrypt-key-file "$key" > /dev/null
[ -f "$dir/$base.safetensors" ] || "$new/bindings/cli/ringload" convert "$file" "$dir/$base.safetensors" > /dev/null
[ -f "$dir/$base.pt" ] || "$new/bindings/cli/ringload" convert "$file" "$dir/$base.pt" > /dev/null
out=$(mktemp -d "$dir/ab-write.XXXXXX")
trap 'rm -rf "$out"' EXIT

python3 - "$old" "$new" "$file" "$dir/$base" "$key" "$rounds" "$here/../tests/support" "$out" "$can_drop" "$warm" "$size" <<'PY'
import json, os, statistics, subprocess, sys
old, new, path, stem, key, rounds, support, out, can_drop, warm, size = sys.argv[1:]
rounds, size = int(rounds), int(size)
sys.path.insert(0, support)
from nginx import Nginx

def prepare(cold):
    if cold and can_drop == "1":
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    subprocess.run([warm, str(size + (512 << 20))], check=True, capture_output=True)

def load(build, target, *extra, cold=True):
    prepare(cold)
    run = subprocess.run([f"{build}/bindings/cli/ringload", "load", target, "--json", *extra],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{build}: ringload load {target} {' '.join(extra)}: {run.stderr.strip()}")
    d = json.loads(run.stdout)
    return d["bytes"] / d["seconds"] / 1e9

def write(build):
    target = os.path.join(out, "written.tensors")
    if os.path.exists(target):
        os.remove(target)
    prepare(True)
    run = subprocess.run([f"{build}/bench/ringload-write-bench", path, target], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{build}: ringload-write-bench: {run.stderr.strip()}")
    return json.loads(run.stdout)["gb_per_s"]

with Nginx(os.path.dirname(path)) as server:
    name = os.path.basename(path)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # served from the page cache
    configs = {
        "load": lambda b: load(b, path),
        "verify": lambda b: load(b, path, "--verify"),
        "encrypted": lambda b: load(b, stem + ".enc.tensors", "--key-file", key),
        "safetensors": lambda b: load(b, stem + ".safetensors"),
        "torch": lambda b: load(b, stem + ".pt"),
        "write": write,
        "http1.1": lambda b: load(b, f"{server.http_url}/{name}", "--connections", "8", cold=False),
        "h2c": lambda b: load(b, f"{server.h2c_url}/{name}", "--http-version", "2", cold=False),
    }
    results = {c: {"old": [], "new": []} for c in configs}
    print(f"file: {path} ({size} bytes), {os.cpu_count()} cores; old {old}, new {new}")
    for r in range(rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for config, run in configs.items():
            for label, build in order:
                results[config][label].append(run(build))
            o, n = results[config]["old"][-1], results[config]["new"][-1]
            print(f"round {r + 1} {config:<12} old {o:6.2f} GB/s  new {n:6.2f} GB/s  new/old {n / o:6.3f}", flush=True)
    print(f"\n{'config':<12} {'old median':>11} {'new median':>11} {'new/old':>8}  (per-round new/old)")
    for config, got in results.items():
        o, n = statistics.median(got["old"]), statistics.median(got["new"])
        per = " ".join(f"{b / a:.2f}" for a, b in zip(got["old"], got["new"]))
        print(f"{config:<12} {o:11.2f} {n:11.2f} {n / o:8.3f}  ({per})")
PY
