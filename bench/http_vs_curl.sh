#!/usr/bin/env bash
# bench/http_vs_curl.sh BUILD_DIR FILE [ROUNDS] [CONNECTIONS]
#
# HTTP/1.1 on loopback: `ringload load http://.../FILE --connections C` against C parallel
# `curl -r A-B` range downloads of the same file (to /dev/null), from the same nginx
# (tests/support/nginx.py: 1 worker, sendfile), interleaved round by round. The file is read
# once first so that both are served from the page cache, and RAM is warmed before every timed
# run (ringload-warm-ram, see docs/benchmarks.md). Prints a table and the median ratios.
# curl is run two ways: discarding the bytes (-o /dev/null: the strict reference, which skips
# the memory work of keeping them) and keeping them in RAM (-o a file in /dev/shm: as a load
# does, the bytes end up in freshly allocated memory).
# ringload is run two ways: with its defaults, and with --prefault on-touch: what its default
# picks on a machine whose memory is backed (bare metal, GPU VMs, which pin guest memory), as
# ringload-warm-ram makes it here for a while; on a VM with free page reporting (this one) the
# default faults the tensors' memory in ahead instead (ringload.hpp, Prefault).
set -euo pipefail
build=$1 file=$2 rounds=${3:-3} connections=${4:-8}
ringload=$(realpath "$build/bindings/cli/ringload")
warm=$(realpath "$build/bench/ringload-warm-ram")
file=$(realpath "$file")
size=$(stat -c %s "$file")
here=$(cd "$(dirname "$0")" && pwd)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
cat "$file" > /dev/null

python3 - "$ringload" "$file" "$size" "$rounds" "$connections" "$here/../tests/support" "$warm" <<'PY'
import json, os, statistics, subprocess, sys, time
ringload, path, size, rounds, connections, support, warm = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                                            int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7])
sys.path.insert(0, support)
from nginx import Nginx

def prepare():
    subprocess.run([warm, str(size + (512 << 20))], check=True, capture_output=True)

def curl_parallel(url, keep):
    prepare()
    part = (size + connections - 1) // connections
    outputs = [f"/dev/shm/ringload-bench-curl-{os.getpid()}-{i}" if keep else "/dev/null" for i in range(connections)]
    try:
        started = time.monotonic()
        procs = [subprocess.Popen(["curl", "-s", "-o", outputs[i], "-r", f"{i * part}-{min(size, (i + 1) * part) - 1}",
                                   url]) for i in range(connections)]
        failed = [p.wait() != 0 for p in procs]
        if any(failed):
            raise SystemExit("curl failed" + (" (is /dev/shm large enough for the file?)" if keep else ""))
        rate = size / (time.monotonic() - started) / 1e9
        if keep and sum(os.path.getsize(o) for o in outputs) != size:
            raise SystemExit("curl's parts do not add up to the file")
        return rate
    finally:
        for o in outputs:
            if keep and os.path.exists(o):
                os.remove(o)

def ours(url, *extra):
    prepare()
    out = subprocess.run([ringload, "load", url, "--json", "--connections", str(connections), *extra],
                         capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    return d["bytes"] / d["seconds"] / 1e9

with Nginx(os.path.dirname(path)) as server:
    url = f"{server.http_url}/{os.path.basename(path)}"
    print(f"file: {path} ({size} bytes), {os.cpu_count()} cores, {connections} connections, HTTP/1.1 on loopback")
    print(f"{'round':<6} {'curl GB/s':>10} {'curl->RAM GB/s':>15} {'ringload GB/s':>14} {'on-touch GB/s':>14} "
          f"{'/curl':>7} {'/curl->RAM':>11} {'on-touch/curl':>14}")
    rows = []
    for r in range(1, rounds + 1):
        c, k, o, t = curl_parallel(url, False), curl_parallel(url, True), ours(url), ours(url, "--prefault", "on-touch")
        rows.append((c, k, o, t, o / c, o / k, t / c))
        print(f"{r:<6} {c:10.2f} {k:15.2f} {o:14.2f} {t:14.2f} {o / c:7.3f} {o / k:11.3f} {t / c:14.3f}")
    med = lambda i: statistics.median(row[i] for row in rows)
    print(f"median: curl {med(0):.2f} GB/s, curl->RAM {med(1):.2f} GB/s, ringload {med(2):.2f} GB/s, "
          f"on-touch {med(3):.2f} GB/s; ratio to curl {med(4):.3f}, to curl->RAM {med(5):.3f}, "
          f"on-touch to curl {med(6):.3f}")
PY
