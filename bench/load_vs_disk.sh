#!/usr/bin/env bash
# bench/load_vs_disk.sh BUILD_DIR FILE [ROUNDS]
#
# Cold-cache load of FILE with `ringload load` (plain and --verify) against the disk's raw
# O_DIRECT io_uring sequential read of the same file, measured in the same run and
# interleaved round by round (these VMs are noisy): fio where installed
# (--rw=read --bs=4M --iodepth=16 --ioengine=io_uring --direct=1 --fixedbufs, huge-page
# buffers as our ring's: common.sh's fio_hugepage) and our own raw reader.
# Before every timed run: page cache dropped (as root) and RAM warmed the same way.
# Prints a table and the median ratios ringload / disk limit (the faster of fio and ours).
# --verify must SHA-256 and CRC32 every byte and copy it out of the ring: "hash cap" is what
# the cores can do of that while the disk reads (`ringload bench limits --only cpu-io`:
# 1 / (1/sha256 + 1/crc32 + 1/memcpy), all cores), and verify is also shown against
# min(disk, hash cap), the most any reader that checks the hashes could reach here.
set -euo pipefail
build=$1 file=$2 rounds=${3:-3}
ringload=$build/bindings/cli/ringload
rawread=$build/bench/ringload-rawread
warm=$build/bench/ringload-warm-ram
size=$(stat -c %s "$file")

source "$(dirname "$0")/common.sh"

fio_rate() {
    command -v fio > /dev/null || { echo 0; return; }
    fio_read_gb_per_s "$file"
}

echo "file: $file ($size bytes), $(nproc) cores, kernel $(uname -r)"
[ $can_drop = 1 ] || echo "NOTE: cannot drop the page cache (not root): these are warm-cache numbers"
printf "%-6s %10s %10s %12s %14s %9s %9s %11s %10s\n" round "fio GB/s" "raw GB/s" "load GB/s" "verify GB/s" \
    "load/disk" "verify/disk" "hash cap" "verify/cap"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
    prepare; fio=$(fio_rate)
    prepare; raw=$("$rawread" "$file" --json | json_field "d['gb_per_s']")
    prepare; load=$("$ringload" load "$file" --json | json_field "d['bytes']/d['seconds']/1e9")
    prepare; verify=$("$ringload" load "$file" --verify --json | json_field "d['bytes']/d['seconds']/1e9")
    cap=$(hash_cap_gb_per_s "$ringload" "$file" cpu-io)
    python3 - "$round" "$fio" "$raw" "$load" "$verify" "$cap" >> "$results" <<'PY'
import sys
round_, fio, raw, load, verify, cap = sys.argv[1], *map(float, sys.argv[2:])
disk = max(fio, raw)
print(f"{round_:<6} {fio:10.2f} {raw:10.2f} {load:12.2f} {verify:14.2f} {load/disk:9.3f} {verify/disk:9.3f}"
      f" {cap:11.2f} {verify/min(disk, cap):10.3f}")
PY
    tail -1 "$results"
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
col = lambda i: [float(r[i]) for r in rows]
print(f"median: fio {statistics.median(col(1)):.2f} GB/s, raw {statistics.median(col(2)):.2f} GB/s, "
      f"ringload load {statistics.median(col(3)):.2f} GB/s, --verify {statistics.median(col(4)):.2f} GB/s, "
      f"hash cap {statistics.median(col(7)):.2f} GB/s")
print(f"median ratio load/disk {statistics.median(col(5)):.3f}, verify/disk {statistics.median(col(6)):.3f}, "
      f"verify/min(disk, hash cap) {statistics.median(col(8)):.3f}")
PY
