# scripts/phase_times.sh (sourced by scripts/test.sh): `phase NAME COMMAND...` runs COMMAND and
# writes its wall time to $phase_file (also from a background job); at exit, whatever the
# outcome, the times are printed as a table, with a warning when the whole run passed
# RINGLOAD_TEST_WARN_MINUTES (45): CI refuses a run over 90 minutes, and the budget
# (docs/testing.md) is 40 on a fresh 2-core machine.
phase_file=${phase_file:-build/test-phases.txt}
mkdir -p "$(dirname "$phase_file")"
: > "$phase_file"
phase_run_started=$(date +%s)

phase() {
    local name=$1 started status=0
    shift
    started=$(date +%s)
    echo "=== $name"
    "$@" || status=$?
    printf '%7d s  %-58s %s\n' $(($(date +%s) - started)) "$name" \
        "$([ $status -eq 0 ] && echo ok || echo "FAILED ($status)")" >> "$phase_file"
    return $status
}

print_phase_times() {
    local total=$(($(date +%s) - phase_run_started)) warn_minutes=${RINGLOAD_TEST_WARN_MINUTES:-45}
    echo
    echo "=== time per phase (those marked 'background' ran at the same time as the dev tests)"
    cat "$phase_file"
    printf '%7d s  %s\n' "$total" "the whole run ($((total / 60)) min)"
    if [ "$total" -gt $((warn_minutes * 60)) ]; then
        echo "WARNING: the test command took $((total / 60)) min, over its ${warn_minutes}-minute mark (CI stops at" \
            "90): move slow tests to --full or make them cheaper (docs/testing.md)" >&2
    fi
}
