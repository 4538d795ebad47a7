#!/usr/bin/env bash
# scripts/demo.sh [FILE]: set up, build (release: the programs the job runs), then the main job on an embedded default:
# write a synthetic GPT-2-XL-shaped fp16 checkpoint (about 3.1 GB, tensorizer format) if it
# is not there yet, load it with `ringload load`, and print the throughput next to the disk's
# raw O_DIRECT io_uring read throughput measured on the same file in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release > /dev/null
# Only what the main job runs: the CLI, the checkpoint writer and the two helpers of
# bench/load_vs_disk.sh (the tests, the Python binding and the benchmarks are built by
# scripts/test.sh). Said before it starts: ~8 s per file to compile per job (the release
# build's own log on this project's 2-core VM), two jobs (the preset's), less where ccache
# has them.
targets=(ringload_cli ringload_synth ringload_rawread ringload_warm_ram)
jobs=$(( $(nproc) < 2 ? $(nproc) : 2 ))
if [ -x build/release/bindings/cli/ringload ]; then
    echo "=== building ${targets[*]}: what changed since the last build"
else # (ninja's dry run cannot count: its glob check always asks for a re-run of CMake)
    files=$(ninja -C build/release -t commands "${targets[@]}" | grep -c -- " -c " || true)
    echo "=== building ${targets[*]}: $files files to compile, about $(( (files * 8 / jobs + 59) / 60 )) min" \
         "on $jobs jobs (less where ccache has them)"
fi
cmake --build --preset release --target "${targets[@]}"

file=${1:-demo/gpt2-xl.tensors}
mkdir -p "$(dirname "$file")"
if [ ! -f "$file" ]; then
    echo "=== writing $file (synthetic GPT-2 XL, fp16)"
    build/release/bench/ringload-synth --shape gpt2-xl "$file"
fi
exec bench/load_vs_disk.sh build/release "$file"
