#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS_PER_TARGET] [EXTRA_SEED_DIR ...]
#
# Builds the libFuzzer targets (the asan preset: clang, ASan+UBSan, coverage) and runs each
# for SECONDS_PER_TARGET (default 600), two at a time, over its seeds: tests/fuzz/seeds,
# tests/data, ../shared/fixtures where it exists, the inputs of crashes found and fixed
# (tests/fuzz/regressions/<target>), the corpus grown by earlier campaigns
# (build/asan/fuzz-campaign/<target>/corpus) and the EXTRA_SEED_DIRs. Prints per target the
# executions, coverage and corpus; keeps crashing inputs in build/asan/fuzz-campaign/<target>/
# crashes; exits non-zero if any target crashed, leaked, hung or ran out of memory.
# Every crash fixed gets its input copied into tests/fuzz/regressions/<target>/ (ctest replays it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
extra=("$@")
targets=(tensorizer_fuzz safetensors_fuzz torch_zip_fuzz pickle_fuzz network_text_fuzz open_file_fuzz resp_fuzz http1_fuzz
    http2_fuzz s3_config_fuzz)
cmake --preset asan > /dev/null
cmake --build --preset asan --target "${targets[@]}"
work=build/asan/fuzz-campaign
shared=../shared/fixtures
seeds_of() {
    case $1 in
        tensorizer_fuzz) echo tests/fuzz/seeds/tensorizer_heads tests/data/tensorizer "$shared" ;;
        safetensors_fuzz) echo tests/fuzz/seeds/safetensors "$shared" ;;
        torch_zip_fuzz) echo tests/data/torch "$shared" ;;
        pickle_fuzz) echo tests/fuzz/seeds/pickle ;;
        network_text_fuzz) echo tests/fuzz/seeds/network_text ;;
        open_file_fuzz) echo tests/fuzz/seeds/safetensors tests/data/torch tests/data/tensorizer tests/data/tensorizer/bad ;;
        resp_fuzz) echo tests/fuzz/seeds/resp ;;
        http1_fuzz) echo tests/fuzz/seeds/http1 ;;
        http2_fuzz) echo tests/fuzz/seeds/http2 ;;
        s3_config_fuzz) echo tests/fuzz/seeds/s3_config ;;
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
    if [ ${#pids[@]} -ge 2 ]; then # two at a time: one per core of a small machine
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
