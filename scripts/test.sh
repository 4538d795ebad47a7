#!/usr/bin/env bash
# scripts/test.sh: set up, build and run every test: the dev build (all tests, including the
# install + find_package consumer and the interop check against the real tensorizer), then
# the same tests under ASan+UBSan and under TSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup_vllm.sh # the real vLLM of the vllm test (~6 GB, several minutes the first time)

for preset in dev asan tsan; do
    echo "=== $preset: configure, build, test"
    cmake --preset "$preset" > /dev/null
    cmake --build --preset "$preset"
    exclude=()
    # A sanitizer-built libringload cannot be loaded by the uninstrumented consumer program.
    [ "$preset" != dev ] && exclude=(-LE install)
    ctest --preset "$preset" "${exclude[@]}"
done
