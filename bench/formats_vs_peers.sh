#!/usr/bin/env bash
# bench/formats_vs_peers.sh BUILD_DIR TENSORIZER_FILE [ROUNDS]
#
# Issue #8's benchmark, in one run, interleaved round by round: the same tensors (>= 2 GiB) as
# tensorizer, safetensors and torch.save zip files (the two copies written next to the input by
# bench/make_format_copies.py with the real libraries), each loaded cold to CPU memory by
#   disk:         the faster of fio's O_DIRECT io_uring sequential read of that file and our
#                 raw reader's (ringload-rawread, the same pattern): the limit,
#   ringload:     `ringload load FILE` (the CLI: the engine),
#   ringload-py:  ringload.load_file from Python,
#   peer:         safetensors.torch.load_file, or torch.load(weights_only=True),
# each in its own process, after the page cache is dropped (as root) and RAM warmed the same
# way. Prints the medians and: ringload / disk per format (safetensors and torch should match
# tensorizer's within 5%) and ringload / peer (should be > 1).
set -euo pipefail
build=$1 file=$2 rounds=${3:-3}
ringload=$build/bindings/cli/ringload
warm=$build/bench/ringload-warm-ram
rawread=$build/bench/ringload-rawread
python=${PYTHON:-.venv/bin/python}
export PYTHONPATH=$build/bindings/python
dir=$(dirname "$file")
"$python" bench/make_format_copies.py "$file" "$dir"
size=$(stat -c %s "$file")
warm_extra_bytes=$((2 << 30)) # a Python process with torch holds ~1 GiB more than the CLI
source "$(dirname "$0")/common.sh"
[ $can_drop = 1 ] || echo "NOTE: cannot drop the page cache (not root): these are warm-cache numbers"
echo "files: $file and model.safetensors, model.pt beside it ($size bytes each, about), $(nproc) cores"

cli() { "$ringload" load "$1" --json | json_field "d['bytes']/d['seconds']/1e9"; }
py() { "$python" bench/format_load.py "$1" "$2" | json_field "d['gb_per_s']"; }
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
    for format in tensorizer safetensors torch; do
        case $format in
            tensorizer) target=$file peer=none ;;
            safetensors) target=$dir/model.safetensors peer=safetensors ;;
            torch) target=$dir/model.pt peer=torch ;;
        esac
        prepare; fio=$(fio_read_gb_per_s "$target")
        prepare; raw=$("$rawread" "$target" --json | json_field "d['gb_per_s']")
        disk=$(python3 -c "print(max($fio, $raw))")
        prepare; c=$(cli "$target")
        p=0 r=0
        if [ $format != tensorizer ]; then
            prepare; r=$(py ringload "$target")
            prepare; p=$(py $peer "$target")
        fi
        echo "$round $format $disk $c $r $p" | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
med = lambda fmt, i: statistics.median(float(r[i]) for r in rows if r[1] == fmt)
print(f"{'format':<12} {'disk GB/s':>9} {'cli GB/s':>9} {'py GB/s':>8} {'peer GB/s':>9} {'cli/disk':>9} "
      f"{'py/peer':>8} {'cli/peer':>9}")
base = med("tensorizer", 3) / med("tensorizer", 2)
for fmt in ("tensorizer", "safetensors", "torch"):
    disk, cli, py, peer = (med(fmt, i) for i in (2, 3, 4, 5))
    vs = f"{py / peer:8.2f} {cli / peer:9.2f}" if peer else f"{'':>8} {'':>9}"
    print(f"{fmt:<12} {disk:9.2f} {cli:9.2f} {py:8.2f} {peer:9.2f} {cli / disk:9.3f} {vs}")
for fmt in ("safetensors", "torch"):
    frac = med(fmt, 3) / med(fmt, 2)
    print(f"{fmt}: fraction of the disk limit {frac:.3f} vs tensorizer's {base:.3f} "
          f"({(frac / base - 1) * 100:+.1f}%, target within 5%)")
PY
