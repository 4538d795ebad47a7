#!/usr/bin/env bash
# bench/http2_vs_h2load.sh BUILD_DIR FILE [ROUNDS] [CONNECTIONS] [STREAMS] [NGINX_HTTP2_CHUNK]
#
# HTTP/2 on loopback, h2c (prior knowledge) and TLS (ALPN h2): `ringload load URL
# --http-version 2 --connections C --streams M` against `h2load -c C -m M` fetching the same
# bytes from the same nginx (tests/support/nginx.py: 1 worker) in 8 MiB range requests
# (ringload's default range size) with the same stream and connection windows, interleaved round
# by round. h2load discards what it receives; ringload puts every byte into host tensors. The file
# is read once first so that both are served from the page cache, and RAM is warmed before every
# timed run (ringload-warm-ram, see docs/benchmarks.md). Prints a table and the median ratios.
# NGINX_HTTP2_CHUNK (default 256k; "default" for nginx's 8k) is nginx's http2_chunk_size, the
# largest DATA frame it sends: at 8k, nginx's own per-frame work caps both clients.
set -euo pipefail
build=$1 file=$2 rounds=${3:-3} connections=${4:-8} streams=${5:-1} chunk=${6:-256k}
ringload=$(realpath "$build/bindings/cli/ringload")
warm=$(realpath "$build/bench/ringload-warm-ram")
file=$(realpath "$file")
size=$(stat -c %s "$file")
here=$(cd "$(dirname "$0")" && pwd)
cat "$file" > /dev/null

python3 - "$ringload" "$file" "$size" "$rounds" "$connections" "$streams" "$here/../tests/support" "$warm" \
    "$chunk" <<'PY'
import json, os, re, statistics, subprocess, sys
ringload, path, size, rounds, connections, streams, support, warm, chunk = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7],
    sys.argv[8], sys.argv[9])
sys.path.insert(0, support)
from nginx import Nginx

RANGE = 8 << 20
# ringload's windows (io/src/http2_source.cpp): a stream's holds a range, the connection's all
# of its streams' ranges plus 1 MiB. h2load takes them as powers of two (2^bits - 1).
stream_bits = (RANGE - 1).bit_length()
connection_bits = (RANGE * streams + (1 << 20) - 1).bit_length()


def prepare():
    subprocess.run([warm, str(size + (512 << 20))], check=True, capture_output=True)


def h2load(url):
    prepare()
    requests = (size + RANGE - 1) // RANGE
    out = subprocess.run(["h2load", "-n", str(requests), "-c", str(connections), "-m", str(streams), "-t", "1",
                          "-w", str(stream_bits), "-W", str(connection_bits), "-H", f"range: bytes=0-{RANGE - 1}",
                          url], capture_output=True, text=True, check=True).stdout
    seconds = float(re.search(r"finished in ([0-9.]+)(m?s)", out).group(1))
    if re.search(r"finished in [0-9.]+ms", out):
        seconds /= 1000
    done = int(re.search(r"(\d+) succeeded", out).group(1))
    if done != requests:
        raise SystemExit("h2load: not every request succeeded:\n" + out)
    return requests * RANGE / seconds / 1e9


def ours(url, extra):
    prepare()
    out = subprocess.run([ringload, "load", url, "--json", "--http-version", "2", "--connections", str(connections),
                          "--streams", str(streams), *extra], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    return d["bytes"] / d["seconds"] / 1e9


with Nginx(os.path.dirname(path), None if chunk == "default" else chunk) as server:
    name = os.path.basename(path)
    cases = [("h2c", f"{server.h2c_url}/{name}", []),
             ("TLS h2", f"{server.https_url}/{name}", ["--ca-file", server.tls_cert])]
    print(f"file: {path} ({size} bytes), {os.cpu_count()} cores, {connections} connections x {streams} streams, "
          f"8 MiB ranges, loopback, nginx http2_chunk_size {chunk}")
    print(f"{'round':<6} {'protocol':<8} {'h2load GB/s':>12} {'ringload GB/s':>14} {'ratio':>7}")
    rows = {label: [] for label, _, _ in cases}
    for r in range(1, rounds + 1):
        for label, url, extra in cases:
            h, o = h2load(url), ours(url, extra)
            rows[label].append((h, o, o / h))
            print(f"{r:<6} {label:<8} {h:12.2f} {o:14.2f} {o / h:7.3f}")
    for label, got in rows.items():
        med = lambda i: statistics.median(row[i] for row in got)
        print(f"median {label}: h2load {med(0):.2f} GB/s, ringload {med(1):.2f} GB/s, ratio {med(2):.3f}")
PY
