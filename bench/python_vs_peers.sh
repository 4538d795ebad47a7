#!/usr/bin/env bash
# bench/python_vs_peers.sh BUILD_DIR FILE [ROUNDS]
#
# The Python binding's benchmark (issue #6), in one run, interleaved round by round: a cold
# load of FILE (>= 2 GiB) to CPU through
#   cli:        `ringload load FILE` (the engine without Python), open + load as Python times them,
#   ringload:   ringload.TensorDeserializer from Python (bench/python_load.py),
#   tensorizer: tensorizer's TensorDeserializer (its default readers, PyPI, in .venv),
# each plain, with verify_hash=True, and on an encrypted copy of FILE (random key). Before every
# run the page cache is dropped (as root) and RAM warmed the same way. Prints each median and
# the ratios: ringload Python / CLI (target >= 0.95) and ringload / tensorizer (targets 1.3x
# plain, 2x verify and encrypted).
set -euo pipefail
build=$1 file=$2 rounds=${3:-3}
ringload=$build/bindings/cli/ringload
warm=$build/bench/ringload-warm-ram
python=${PYTHON:-.venv/bin/python}
export PYTHONPATH=$build/bindings/python
size=$(stat -c %s "$file")
# A Python process with torch holds ~1 GiB more than the CLI: warm that much more RAM for all.
warm_extra_bytes=$((2 << 30))
source "$(dirname "$0")/common.sh"
key=$(mktemp) sealed=$(dirname "$file")/.bench-python-sealed.tensors results=$(mktemp)
trap 'rm -f "$key" "$sealed" "$results"' EXIT
head -c 32 /dev/urandom > "$key"
"$ringload" convert "$file" "$sealed" --encrypt-key-file "$key" > /dev/null
[ $can_drop = 1 ] || echo "NOTE: cannot drop the page cache (not root): these are warm-cache numbers"
echo "file: $file ($size bytes), $(nproc) cores"

# The CLI's open (index, ring set-up) and load, as the Python deserializer's constructor does both.
cli() { "$ringload" load "$@" --json | json_field "d['bytes']/(d['seconds']+d['open_seconds'])/1e9"; }
py() { "$python" bench/python_load.py "$@" | json_field "d['gb_per_s']"; }
for round in $(seq 1 "$rounds"); do
    for case in plain verify encrypted; do
        target=$file extra=() cli_extra=()
        [ $case = verify ] && extra=(--verify) cli_extra=(--verify)
        [ $case = encrypted ] && target=$sealed extra=(--key-file "$key") cli_extra=(--key-file "$key")
        prepare; c=$(cli "$target" "${cli_extra[@]}")
        prepare; r=$(py ringload "$target" "${extra[@]}")
        prepare; t=$(py tensorizer "$target" "${extra[@]}")
        echo "$round $case $c $r $t" | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print(f"{'case':<10} {'cli GB/s':>9} {'py GB/s':>8} {'tensorizer':>10} {'py/cli':>7} {'py/tensorizer':>14}")
for case, target in (("plain", 1.3), ("verify", 2.0), ("encrypted", 2.0)):
    c, r, t = (statistics.median(float(row[i]) for row in rows if row[1] == case) for i in (2, 3, 4))
    print(f"{case:<10} {c:9.2f} {r:8.2f} {t:10.2f} {r / c:7.3f} {r / t:9.2f} (>= {target})")
PY
