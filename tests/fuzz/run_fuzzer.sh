#!/usr/bin/env bash
# tests/fuzz/run_fuzzer.sh FUZZER SECONDS WORK_DIR SEED_DIR...
#
# Runs one libFuzzer target for SECONDS over the seed directories (and the corpus it grew in
# WORK_DIR/<name>/corpus on earlier runs), saving crashing inputs in WORK_DIR/<name>/crashes.
# Prints one line: executions, coverage, corpus size; on a crash the fuzzer's report too. The
# exit status is the fuzzer's: non-zero on a crash, a leak, a timeout or an out-of-memory.
# Used by ctest (a few seconds per target) and by scripts/fuzz.sh (campaigns).
set -uo pipefail
fuzzer=$1 seconds=$2 work=$3
shift 3
name=$(basename "$fuzzer")
corpus=$work/$name/corpus
crashes=$work/$name/crashes
log=$work/$name/last.log
mkdir -p "$corpus" "$crashes"
seeds=()
for dir in "$@"; do
    [ -d "$dir" ] && seeds+=("$dir")
done
# -timeout: one input running this long is a hang; -rss_limit_mb: memory growing with a claim.
"$fuzzer" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 -max_len=300000 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$corpus" "${seeds[@]}" > "$log" 2>&1
status=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
coverage=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
echo "$name: ${runs:-?} executions in ${seconds} s, ${coverage:-no coverage line}, corpus $(ls "$corpus" | wc -l) inputs, exit $status"
if [ "$status" -ne 0 ]; then
    grep -v '^#' "$log" | tail -60
    echo "$name: crashing inputs kept in $crashes: $(ls "$crashes" | tr '\n' ' ')"
fi
exit "$status"
