#!/usr/bin/env bash
# scripts/soak.sh [SECONDS] [CONCURRENCY] [SOAK ARGUMENTS ...]
#
# The soak for long runs (issue #27, part 4): builds ringload_soak and the CLI (the release
# preset; RINGLOAD_SOAK_PRESET=tsan for a ThreadSanitizer run) and runs them through
# tests/tools/soak.py for SECONDS (default 600) with CONCURRENCY loads at once (default 16):
# tests/data's fixtures from files, the same models from nginx (HTTP/1.1, h2c, https), moto
# (S3) and redis-server where installed, cancels and sources that must fail mixed in. Other
# arguments go to ringload_soak (--seed S, --file BIG_MODEL, --ring default, --json F, ...).
# Prints the summary; exits non-zero on a wrong result, an unexpected failure or growth.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
concurrency=${2:-16}
shift 2 || shift $#
preset=${RINGLOAD_SOAK_PRESET:-release}
cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset" --target ringload_soak ringload_cli
export TSAN_OPTIONS="suppressions=$PWD/tests/support/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
exec python3 tests/tools/soak.py "build/$preset/tests/ringload_soak" "build/$preset/bindings/cli/ringload" tests/data \
    --seconds "$seconds" --concurrency "$concurrency" "$@"
