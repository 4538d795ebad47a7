# bench/common.sh: sourced by the benchmark scripts. Needs $warm (ringload-warm-ram) and $size.
#
# prepare: before every timed run, drop the page cache (as root) and warm RAM the same way,
# because this VM hands freed RAM back to the host and a first touch of it is slow
# (docs/benchmarks.md).
can_drop=0
if [ -w /proc/sys/vm/drop_caches ]; then can_drop=1; fi
prepare() {
    if [ $can_drop = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
    "$warm" $((size + ${warm_extra_bytes:-$((512 << 20))}))
}
# json_field EXPR: evaluates EXPR over d = the JSON object on stdin.
json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# fio_hugepage ARGS...: fio reading into (or writing from) registered huge-page buffers, as
# our ring and raw tools do: with 4 KiB pages the block layer splits each 4 MiB O_DIRECT
# request and fio measured 0.5-0.9 GB/s where it reads 1.6-1.8 with huge pages (same file).
# --iomem_align=2M: malloc's block is not at a 2 MiB boundary, so its ends stayed 4 KiB pages
# (unaligned, fio read 1.6-1.8 GB/s at queue depth 1 where 2 MiB-aligned buffers read 3.1-3.6).
fio_hugepage() { GLIBC_TUNABLES=glibc.malloc.hugetlb=1 fio "$@" --fixedbufs --iomem_align=2M; } # io_uring options: after --ioengine
# fio_read_gb_per_s FILE: fio's O_DIRECT sequential read of FILE, in GB/s (the pattern our
# ring reads with: 4 MiB, 16 in flight, io_uring).
fio_read_gb_per_s() {
    fio_hugepage --name=r --filename="$1" --rw=read --bs=4M --iodepth=16 --ioengine=io_uring --direct=1 \
        --output-format=json 2>/dev/null | json_field "d['jobs'][0]['read']['bw_bytes']/1e9"
}
# hash_cap_gb_per_s RINGLOAD FILE GROUP: what all cores do of SHA-256 + CRC32 + a copy of every
# byte, 1 / (1/sha256 + 1/crc32 + 1/memcpy), from `ringload bench limits --only GROUP` (cpu:
# nothing else running; cpu-io: while the disk reads FILE). "All cores" is the largest "N cores"
# figure (N is what the process may use, which can be fewer than nproc says under a cpuset).
# Fails with bench limits' own message (so `x=$(hash_cap_gb_per_s ...)` stops a set -e script).
hash_cap_gb_per_s() {
    local limits errors status=0
    limits=$(mktemp) errors=$(mktemp)
    if ! "$1" bench limits --file "$2" --only "$3" --json "$limits" > /dev/null 2> "$errors"; then
        echo "bench limits --only $3 failed: $(cat "$errors")" >&2
        rm -f "$limits" "$errors"
        return 1
    fi
    python3 - "$limits" <<'PY' || status=$?
import json, re, sys
rates = {}
for f in json.load(open(sys.argv[1]))["figures"]:
    m = re.fullmatch(r"(\S+) (\d+) cores?(, disk reading)?", f["name"])
    if not m:
        continue
    if "gb_per_s" not in f:
        sys.exit(f"bench limits: {f['name']}: {f.get('unavailable', 'no figure')}")
    rates.setdefault(m[1], {})[int(m[2])] = f["gb_per_s"]
rate = {work: by_cores[max(by_cores)] for work, by_cores in rates.items()}
print(1 / (1 / rate["sha256"] + 1 / rate["crc32"] + 1 / rate["memcpy"]))
PY
    rm -f "$limits" "$errors"
    return $status
}
