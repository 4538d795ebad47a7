#!/usr/bin/env bash
# scripts/test.sh [--full]: set up, build and run the tests (docs/testing.md says which tier
# holds which test, and why).
#
#   (no option)  CI's tier, the README's test command: the dev build with every test (the
#                package's pytest files under both torches where the test is about torch
#                versions, under Debian's torch 1.13 where it is not); under ASan+UBSan and TSan
#                the C++ tests, the fuzz smoke and the Python-driven tests of concurrency and
#                parsers (label `sanitizers`).
#   --full       everything: every test under both torches, and every test of the dev build
#                (but the install checks) again under ASan+UBSan and TSan. For a release, and
#                after a change to the engine's threading or memory handling.
#
# Both fail when a test skips for a reason other than a missing GPU (scripts/ctest_report.py,
# tests/support/strict_skips.py) or when a test group's dependency is missing at configure time
# (the ON switches below), and print the time of each phase at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=ci
case "${1:-}" in
    "") ;;
    --full) tier=full ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
esac
source scripts/phase_times.sh

phase "set-up" ./scripts/setup.sh
phase "set-up: vLLM" ./scripts/setup_vllm.sh # the real vLLM of the vllm test (~6 GB the first time)

# Test groups that would otherwise drop out with only a status line when their dependency is
# missing: here a missing one fails the configure.
dev_switches=(-DRINGLOAD_WITH_PYTHON=ON -DRINGLOAD_WITH_TORCH=ON -DRINGLOAD_WITH_FUSE=ON)
sanitizer_switches=(-DRINGLOAD_WITH_FUSE=ON)

run_preset() {
    local preset=$1 selection=("${@:2}") switches
    if [ "$preset" = dev ]; then switches=("${dev_switches[@]}"); else switches=("${sanitizer_switches[@]}"); fi
    phase "$preset: configure" cmake --preset "$preset" "${switches[@]}" > /dev/null
    phase "$preset: build" cmake --build --preset "$preset"
    local junit="$PWD/build/$preset/ctest-junit.xml" failed=0
    phase "$preset: ctest ${selection[*]}" ctest --preset "$preset" "${selection[@]}" --output-junit "$junit" || failed=1
    scripts/ctest_report.py "build/$preset" "$junit" --slowest 20 || failed=1
    return $failed
}

if [ "$tier" = full ]; then
    run_preset dev
    # A sanitizer-built libringload cannot be loaded by the uninstrumented consumer program.
    run_preset asan -LE install
    run_preset tsan -LE install
else
    run_preset dev -LE '^full$'
    run_preset asan -L '^sanitizers$'
    run_preset tsan -L '^sanitizers$'
fi
