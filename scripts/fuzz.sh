#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS_PER_TARGET] [EXTRA_SEED_DIR ...]
#
# Builds the libFuzzer targets (the asan preset: clang, ASan+UBSan, coverage) and runs each
# for SECONDS_PER_TARGET (default 600), two at a time, over its seeds: those ctest uses
# (tests/fuzz/CMakeLists.txt writes them to build/asan/tests/fuzz/<target>.seeds),
# ../shared/fixtures for the file formats where it exists, the inputs of crashes found and
# fixed (tests/fuzz/regressions/<target>), the corpus grown by earlier campaigns
# (build/asan/fuzz-campaign/<target>/corpus) and the EXTRA_SEED_DIRs. Prints per target the
# executions, coverage and corpus; keeps crashing inputs in build/asan/fuzz-campaign/<target>/
# crashes; exits non-zero if any target crashed, leaked, hung or ran out of memory.
# FUZZ_TARGETS="resp_fuzz http1_fuzz" runs only those targets; FUZZ_JOBS=1 one at a time.
# Every crash fixed gets its input copied into tests/fuzz/regressions/<target>/ (ctest replays it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
extra=("$@")
all_targets=(tensorizer_fuzz safetensors_fuzz torch_zip_fuzz pickle_fuzz network_text_fuzz open_file_fuzz resp_fuzz
    http1_fuzz http2_fuzz s3_config_fuzz)
read -r -a targets <<< "${FUZZ_TARGETS:-${all_targets[*]}}"
for target in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $target "* ]] || { echo "fuzz.sh: no target $target (${all_targets[*]})" >&2; exit 2; }
done
cmake --preset asan -DRINGLOAD_FUZZ_IO_O1=ON > /dev/null # campaigns: the network targets on io/ at -O1
cmake --build --preset asan --target "${targets[@]}"
work=build/asan/fuzz-campaign
shared=../shared/fixtures
seeds_of() {
    cat "build/asan/tests/fuzz/$1.seeds"
    case $1 in
        tensorizer_fuzz | safetensors_fuzz | torch_zip_fuzz | open_file_fuzz) echo "$shared" ;;
    esac
}
mkdir -p "$work"
status=0
run_one() {
    local target=$1
    # shellcheck disable=SC2046
    tests/fuzz/run_fuzzer.sh "build/asan/tests/fuzz/$target" "$seconds" "$work" \
        "tests/fuzz/regressions/$target" $(seeds_of "$target") "${extra[@]}" > "$work/$target.summary" 2>&1
}
pids=()
for target in "${targets[@]}"; do
    run_one "$target" &
    pids+=($!)
    if [ ${#pids[@]} -ge "${FUZZ_JOBS:-2}" ]; then # two at a time: one per core of a small machine
        wait "${pids[0]}" || status=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do
    wait "$pid" || status=1
done
for target in "${targets[@]}"; do
    cat "$work/$target.summary"
done
[ $status = 0 ] && echo "fuzz: no crash in ${#targets[@]} targets x ${seconds} s" || echo "fuzz: CRASHES (see above)"
exit $status
