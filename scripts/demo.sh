#!/usr/bin/env bash
# scripts/demo.sh [FILE]: set up, build (release), then the main job on an embedded default:
# write a synthetic GPT-2-XL-shaped fp16 checkpoint (about 3.1 GB, tensorizer format) if it
# is not there yet, load it with `ringload load`, and print the throughput next to the disk's
# raw O_DIRECT io_uring read throughput measured on the same file in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release > /dev/null
cmake --build --preset release

file=${1:-demo/gpt2-xl.tensors}
mkdir -p "$(dirname "$file")"
if [ ! -f "$file" ]; then
    echo "=== writing $file (synthetic GPT-2 XL, fp16)"
    build/release/bench/ringload-synth --shape gpt2-xl "$file"
fi
exec bench/load_vs_disk.sh build/release "$file"
