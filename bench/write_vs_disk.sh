#!/usr/bin/env bash
# bench/write_vs_disk.sh BUILD_DIR FILE [ROUNDS]
#
# The writer and the encrypted load against the machine's limits, measured in the same run and
# interleaved round by round (these VMs are noisy). FILE (>= 2 GiB, e.g. the demo checkpoint)
# is the input; outputs go next to it and are removed at the end.
#   write:      ringload-write-bench FILE out (FILE loaded into memory first, untimed; then
#               write_tensorizer until the file is durable and renamed into place: `convert`
#               streams, its reads would share the disk with its writes) against the raw
#               O_DIRECT sequential write of the same size to a fresh file in the same
#               directory, fdatasync included: ringload-rawwrite (fio's pattern: --rw=write
#               --bs=4M --ioengine=io_uring --direct=1, huge-page registered buffers as
#               fio_hugepage's, with 32 writes in flight as our writer's ring; fio
#               runs 16). fio itself is shown for reference; its bandwidth
#               leaves out its end_fsync, which on this VM is where the host's write cache is
#               flushed (up to 0.5 s of a 2 s write), so it is not the baseline.
#               The writer must SHA-256 and CRC32 every byte (the format stores both) and copy
#               it into the ring: "hash cap" is what the cores do of that with nothing else
#               running (`ringload bench limits --only cpu`: 1 / (1/sha256 + 1/crc32 + 1/memcpy),
#               all cores), and the write is also shown against min(raw write, hash cap).
#   sealed:     the same write, encrypted with a random key (reported, no target).
#   enc. load:  `ringload load` of the encrypted file (cold cache where root) against
#               min(fio O_DIRECT read of that file, cores x one core's XSalsa20-Poly1305 open
#               rate from ringload-secretbox-rate).
set -euo pipefail
build=$1 file=$2 rounds=${3:-3}
ringload=$build/bindings/cli/ringload
warm=$build/bench/ringload-warm-ram
rate=$build/bench/ringload-secretbox-rate
rawwrite=$build/bench/ringload-rawwrite
writebench=$build/bench/ringload-write-bench
size=$(stat -c %s "$file")
dir=$(dirname "$file")
out=$dir/.bench-write.tensors sealed=$dir/.bench-sealed.tensors fio_file=$dir/.bench-fio-write
raw_file=$dir/.bench-raw-write
key=$(mktemp) results=$(mktemp)
trap 'rm -f "$out" "$sealed" "$fio_file" "$raw_file" "$key" "$results"' EXIT
head -c 32 /dev/urandom > "$key"
command -v fio > /dev/null || { echo "fio is needed (apt-get install fio)"; exit 1; }

source "$(dirname "$0")/common.sh"

fio_write() {
    rm -f "$fio_file"
    fio_hugepage --name=w --filename="$fio_file" --rw=write --bs=4M --iodepth=16 --ioengine=io_uring --direct=1 \
        --size="$size" --end_fsync=1 --output-format=json 2>/dev/null | json_field "d['jobs'][0]['write']['bw_bytes']/1e9"
    rm -f "$fio_file"
}
raw_write() {
    rm -f "$raw_file"
    "$rawwrite" "$raw_file" "$size" 32 | json_field "d['gb_per_s']"
    rm -f "$raw_file"
}

cores=$(nproc)
open_rate=$("$rate" | json_field "d['open_gb_per_s']")
hash_cap=$(hash_cap_gb_per_s "$ringload" "$file" cpu)
echo "file: $file ($size bytes), $cores cores, kernel $(uname -r); one core opens XSalsa20-Poly1305 at $open_rate GB/s;"
echo "hash cap (SHA-256 + CRC32 + copy of every byte on all cores, nothing else running): $hash_cap GB/s"
[ $can_drop = 1 ] || echo "NOTE: cannot drop the page cache (not root): reads may be warm"
printf "%-6s %8s %8s %8s %9s %8s %8s %9s %10s %9s %9s\n" round "fio w" "raw w" "write" "sealed w" "fio r" \
    "decrypt" "enc load" "write/raw" "load/lim" "write/cap"
for round in $(seq 1 "$rounds"); do
    prepare; fio_w=$(fio_write)
    prepare; raw_w=$(raw_write)
    # A fresh file each time, as for the raw writer (replacing a file frees the old one's
    # blocks inside the rename: 0.6 s for 3 GB here).
    rm -f "$out" "$sealed"
    prepare; write=$("$writebench" "$file" "$out" | json_field "d['gb_per_s']")
    prepare; sealed_w=$("$writebench" "$file" "$sealed" "$key" | json_field "d['gb_per_s']")
    prepare; fio_r=$(fio_read_gb_per_s "$sealed")
    prepare; load=$("$ringload" load "$sealed" --key-file "$key" --json | json_field "d['bytes']/d['seconds']/1e9")
    python3 - "$round" "$fio_w" "$raw_w" "$write" "$sealed_w" "$fio_r" "$open_rate" "$cores" "$load" "$hash_cap" \
        >> "$results" <<'PY'
import sys
round_, fio_w, raw_w, write, sealed_w, fio_r, open_rate, cores, load, cap = sys.argv[1], *map(float, sys.argv[2:])
decrypt = cores * open_rate
print(f"{round_:<6} {fio_w:8.2f} {raw_w:8.2f} {write:8.2f} {sealed_w:9.2f} {fio_r:8.2f} {decrypt:8.2f} {load:9.2f} "
      f"{write/raw_w:10.3f} {load/min(fio_r, decrypt):9.3f} {write/min(raw_w, cap):9.3f}")
PY
    tail -1 "$results"
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
m = lambda i: statistics.median(float(r[i]) for r in rows)
print(f"median GB/s: fio write (no fsync) {m(1):.2f}, raw write {m(2):.2f}, ringload write {m(3):.2f}, "
      f"encrypted write {m(4):.2f}; fio read {m(5):.2f}, cores x decrypt {m(6):.2f}, encrypted load {m(7):.2f}")
print(f"median ratio write/raw-write {m(8):.3f}, encrypted load/min(disk, cores x decrypt) {m(9):.3f}, "
      f"write/min(raw write, hash cap) {m(10):.3f}")
PY
