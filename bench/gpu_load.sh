#!/usr/bin/env bash
# bench/gpu_load.sh BUILD_DIR [FILE]
#
# The GPU issue's benchmarks, in one run, on a machine with an NVIDIA GPU (FILE defaults to a
# synthetic Llama-3-8B, 16 GB of float16, written once with ringload-synth):
#   hot:  FILE in the page cache; ringload's load to cuda:0 against the pinned host-to-device
#         cudaMemcpyAsync rate the same program measures (target >= 0.90), plain and --verify;
#   cold: page cache dropped; the load against the disk's raw O_DIRECT read of the same file
#         (ringload-rawread, target >= 0.95);
#   host memory: every run's peak RSS raise against its 256 MiB ring + 64 MiB.
# Where the cache cannot be dropped (not root, or a sandbox that refuses), the cold row says so.
set -euo pipefail
build=$1
file=${2:-$build/llama3-8b.tensors}
bench=$build/bench/ringload-gpu-bench
rawread=$build/bench/ringload-rawread
warm=$build/bench/ringload-warm-ram
[ -x "$bench" ] || { echo "no $bench: build with a CUDA toolkit (RINGLOAD_WITH_CUDA=AUTO finds /usr/local/cuda)"; exit 1; }
if [ ! -f "$file" ]; then
    "$build/bench/ringload-synth" --shape llama3-8b "$file"
fi
size=$(stat -c %s "$file")
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader || true
echo "file: $file ($size bytes), $(nproc) cores, kernel $(uname -r)"

cat "$file" > /dev/null # into the page cache
hot=$("$bench" "$file")
hot_verify=$("$bench" "$file" --verify)
echo "hot:         $hot"
echo "hot, verify: $hot_verify"
cold_note=""
if [ $can_drop = 1 ] && sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
    raw=$("$rawread" "$file" --json | json_field "d['gb_per_s']")
    prepare
    cold=$("$bench" "$file")
    echo "cold:        $cold"
    echo "raw O_DIRECT read: $raw GB/s"
else
    cold=""; raw=0; cold_note="page cache cannot be dropped here: no cold-cache numbers"
fi
python3 - "$hot" "$hot_verify" "$cold" "$raw" "$cold_note" <<'PY'
import json, sys
hot, hot_verify = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"\nGPU: {hot['gpu']}; pinned host-to-device {hot['pinned_h2d_gb_per_s']:.2f} GB/s")
print(f"hot cache:  load {hot['load_gb_per_s']:.2f} GB/s = {hot['load_over_h2d']:.3f} of pinned H2D (target 0.90); "
      f"--verify {hot_verify['load_gb_per_s']:.2f} GB/s = {hot_verify['load_over_h2d']:.3f}")
rows = [("hot", hot), ("hot --verify", hot_verify)]
if sys.argv[3]:
    cold, raw = json.loads(sys.argv[3]), float(sys.argv[4])
    print(f"cold cache: load {cold['load_gb_per_s']:.2f} GB/s = {cold['load_gb_per_s'] / raw:.3f} of the raw "
          f"O_DIRECT read ({raw:.2f} GB/s; target 0.95)")
    rows.append(("cold", cold))
else:
    print(sys.argv[5])
for name, row in rows:
    print(f"host memory ({name}): peak RSS raised {row['peak_raise_mib']:.0f} MiB, allowed "
          f"{row['peak_raise_allowed_mib']:.0f} (ring {row['ring_mib']} MiB + 64): "
          f"{'ok' if row['rss_ok'] else 'OVER'}{'' if row['peak_reset'] else ' (peak not resettable: upper bound)'}")
PY
