#!/bin/sh
# tests/support/expect_pread.sh LAUNCHER [--enosys] PROGRAM [ARGS...]: runs PROGRAM with io_uring
# refused (tests/tools/without_io_uring.c) and passes only if it passed and the engine said it
# fell back to pread (so that a test passing on io_uring after all cannot count).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" > "$log" 2>&1
status=$?
tail -n 40 "$log"
[ "$status" -eq 0 ] || exit "$status"
if ! grep -q "ringload: io_uring unavailable" "$log"; then
    echo "FAILED: no 'ringload: io_uring unavailable' line: io_uring was not refused"
    exit 1
fi
