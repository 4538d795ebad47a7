#!/usr/bin/env bash
# scripts/test.sh [--full]: set up, build and run the tests (docs/testing.md says which tier
# holds which test, why, and how long each phase takes).
#
#   (no option)  CI's tier, the README's test command: the dev build with every test (the
#                package's pytest files about torch versions under Debian's torch 1.13 and
#                PyPI's torch 2.x, the others under torch 2.x); under ASan+UBSan and TSan the
#                C++ tests, the fuzz smoke and the Python-driven tests of concurrency and parsers
#                (all but the ctest labels `full_under_sanitizers` and `install`).
#   --full       everything: also the label `full` (the torch 1.13 runs of the other pytest
#                files), every test of the dev build but the install checks again under
#                ASan+UBSan and TSan, and the wheel built for release. For a release, and after
#                a change to the engine's threading or memory handling.
#
# Both fail when a test skips for a reason other than a missing GPU (scripts/ctest_report.py,
# tests/support/strict_skips.py) or when a test group's dependency is missing at configure time
# (the ON switches below), and print the time of each phase at the end. The sanitizer builds
# run in the background while the dev tests run (at low priority: the dev tests spend much of
# their time waiting on servers, timeouts and child processes).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=ci
case "${1:-}" in
    "") ;;
    --full) tier=full ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
esac
source scripts/phase_times.sh
background=""
finish() {
    [ -n "$background" ] && kill -- -"$background" 2> /dev/null
    print_phase_times
}
trap finish EXIT

phase "set-up" ./scripts/setup.sh
phase "set-up: vLLM" ./scripts/setup_vllm.sh # the real vLLM of the vllm test (~6 GB the first time)
phase "set-up: SGLang" ./scripts/setup_sglang.sh # SGLang on top of .venv-vllm (~0.5 GB, a minute)

# Test groups that would otherwise drop out with only a status line when their dependency is
# missing: here a missing one fails the configure. (CUDA stays AUTO: Debian has no toolkit.)
dev_switches=(-DRINGLOAD_WITH_PYTHON=ON -DRINGLOAD_WITH_TORCH=ON -DRINGLOAD_WITH_FUSE=ON)
if [ "$tier" = full ]; then
    dev_selection=()
    sanitizer_selection=(-LE install) # a sanitizer-built libringload cannot be loaded by the consumer
    # The network fuzz targets on io/ built at -O1, as the campaigns run them.
    sanitizer_switches=(-DRINGLOAD_WITH_FUSE=ON -DRINGLOAD_FUZZ_IO_O1=ON)
    export RINGLOAD_WHEEL_BUILD_TYPE=Release
    # The 45-minute mark is the CI tier's; the rest is expected to take longer (55 min measured
    # on 2 cores beside other work, docs/testing.md).
    export RINGLOAD_TEST_WARN_MINUTES=${RINGLOAD_TEST_WARN_MINUTES:-90}
else
    dev_selection=(-LE '^full$')
    sanitizer_selection=(-LE '^(full|full_under_sanitizers|install)$')
    # The 10-second fuzz smoke runs the network targets on the preset's own io/ (-O0): the -O1
    # copy is a third of the asan build's compile time.
    sanitizer_switches=(-DRINGLOAD_WITH_FUSE=ON -DRINGLOAD_FUZZ_IO_O1=OFF)
fi

build_sanitizer_presets() {
    local preset
    for preset in asan tsan; do
        phase "$preset: configure (background)" nice -n 19 cmake --preset "$preset" "${sanitizer_switches[@]}" || return
        phase "$preset: build (background, beside the dev tests)" nice -n 19 cmake --build --preset "$preset" || return
    done
}

run_tests() {
    local preset=$1 junit="$PWD/build/$1/ctest-junit.xml" failed=0
    shift
    phase "$preset: ctest $*" ctest --preset "$preset" "$@" --output-junit "$junit" || failed=1
    scripts/ctest_report.py "build/$preset" "$junit" --slowest 20 || failed=1
    return $failed
}

phase "dev: configure" cmake --preset dev "${dev_switches[@]}" > /dev/null
phase "dev: build" cmake --build --preset dev

set -m # the background builds in a process group of their own, so that an early exit stops them
build_sanitizer_presets > build/sanitizer-builds.log 2>&1 &
background=$!
set +m
echo "=== asan and tsan: configure and build in the background (build/sanitizer-builds.log)"

# A failed test phase does not stop the run: the later phases still build and test (every
# failure is reported, and the times are whole); the run fails at the end.
failed=()
run_tests dev "${dev_selection[@]}" || failed+=(dev)

built=0
phase "asan, tsan: the rest of their builds, after the dev tests" wait "$background" || built=$?
background=""
if [ $built -ne 0 ]; then
    tail -n 40 build/sanitizer-builds.log
    echo "the sanitizer builds failed (build/sanitizer-builds.log)" >&2
    exit 1
fi
run_tests asan "${sanitizer_selection[@]}" || failed+=(asan)
run_tests tsan "${sanitizer_selection[@]}" || failed+=(tsan)
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: the tests of ${failed[*]} (above)" >&2
    exit 1
fi
