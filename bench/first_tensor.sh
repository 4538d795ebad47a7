#!/usr/bin/env bash
# bench/first_tensor.sh NEW_BUILD FILE [ROUNDS] [OLD_BUILD]
#
# The streamed hand-over on a cold file: `ringload load FILE --json` reports when the first
# tensor was handed over (LoadOptions::on_tensor) and the whole load, both from the start of
# the load; the goal is first/whole <= 0.05 (issue #24). With OLD_BUILD (the build before the
# hand-over), both builds load the file cold in turn, interleaved round by round (NEW first in
# odd rounds), for the whole-load throughput NEW/OLD, which must stay within noise. The page
# cache is dropped (as root) and RAM warmed before every timed run (common.sh).
#
#     bench/first_tensor.sh build/release /work/benchdata/gpt2-xl.tensors 6 /work/main/build/release
set -euo pipefail
new=$(realpath "$1") file=$(realpath "$2") rounds=${3:-6} old=${4:+$(realpath "$4")}
here=$(cd "$(dirname "$0")" && pwd)
size=$(stat -c %s "$file")
warm=$new/bench/ringload-warm-ram
source "$here/common.sh"
[ $can_drop = 1 ] || echo "note: not root, the page cache is not dropped: these are not cold runs" >&2

python3 - "$new" "$file" "$rounds" "$old" "$can_drop" "$warm" "$size" <<'PY'
import json, os, statistics, subprocess, sys
new, path, rounds, old, can_drop, warm, size = sys.argv[1:]
rounds, size = int(rounds), int(size)

def cold_load(build):
    if can_drop == "1":
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    subprocess.run([warm, str(size + (512 << 20))], check=True, capture_output=True)
    run = subprocess.run([f"{build}/bindings/cli/ringload", "load", path, "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{build}: ringload load {path}: {run.stderr.strip()}")
    d = json.loads(run.stdout)
    return d["first_tensor_seconds"], d["seconds"], d["bytes"] / d["seconds"] / 1e9

builds = [("new", new)] + ([("old", old)] if old else [])
got = {label: [] for label, _ in builds}
print(f"file: {path} ({size} bytes), {os.cpu_count()} cores; new {new}" + (f", old {old}" if old else ""))
for r in range(rounds):
    for label, build in (builds if r % 2 == 0 else builds[::-1]):
        first, whole, rate = cold_load(build)
        got[label].append((first, whole, rate))
        print(f"round {r + 1} {label}: first tensor {first:.3f} s, whole {whole:.3f} s, first/whole "
              f"{first / whole:.3f}, {rate:.2f} GB/s", flush=True)
first = [f for f, _, _ in got["new"]]
ratio = [f / w for f, w, _ in got["new"]]
print(f"\nnew: first tensor median {statistics.median(first):.3f} s, first/whole median "
      f"{statistics.median(ratio):.3f} (max {max(ratio):.3f}; goal <= 0.05), "
      f"{statistics.median(r for _, _, r in got['new']):.2f} GB/s")
if old:
    o = statistics.median(r for _, _, r in got["old"])
    n = statistics.median(r for _, _, r in got["new"])
    per = " ".join(f"{b[2] / a[2]:.2f}" for a, b in zip(got["old"], got["new"]))
    print(f"whole load: old median {o:.2f} GB/s, new median {n:.2f} GB/s, new/old {n / o:.3f} ({per}); "
          f"old first/whole median {statistics.median(f / w for f, w, _ in got['old']):.3f}")
PY
