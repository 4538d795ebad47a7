#!/usr/bin/env python3
"""tests/bindings/http_faults_test.py RINGLOAD DATA_DIR

Network faults between `ringload` and a real nginx, injected by our proxy
(tests/support/fault_proxy.py): connections cut mid-body, resets, stalls, 503 bursts, over HTTP/1.1 and (transport faults) h2c. Each load
of an 8 MB fixture (hashes verified) ends with the manifest's values, or, when the fault never
ends or cannot be worked around, fails with one clear line inside its deadline. Exits 77 where
nginx is not installed.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from fault_proxy import FaultProxy  # noqa: E402
from checks import Checks  # noqa: E402
from nginx import Nginx  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
check = checks.check


try:
    server = Nginx(DATA)
except RuntimeError as error:
    print(f"SKIP: {error}")
    sys.exit(77)

FILE = "large_mixed_v2.tensors"
manifest = json.load(open(os.path.join(DATA, "tensorizer", FILE + ".json")))
want = [t["sha256"] for t in manifest["tensors"]]

TRANSPORT_FAULTS = [
    ("no fault", [], 10),
    ("bodies cut mid-way", ["cut:1000000"] * 6, 20),
    ("connections reset", ["reset:1500000"] * 6, 20),
    ("resets before any byte", ["reset:0"] * 3, 20),
    ("stalls", ["stall:2500000"] * 2, 30),
]
HTTP1 = ["--connections", "4"]
# HTTP/2 (h2c): a cut or reset connection fails every stream on it, each resumed from its last
# byte on another connection.
HTTP2 = ["--http-version", "2", "--connections", "2", "--streams", "4", "--range-size", "1048576"]


def load(proxy, protocol, faults, deadline):
    proxy.schedule(faults)
    started = time.monotonic()
    out = subprocess.run([RINGLOAD, "load", f"{proxy.url}/tensorizer/{FILE}", "--json", "--sha256", "--verify",
                          "--timeout", "1", *protocol], capture_output=True, text=True, timeout=deadline + 30)
    return out, time.monotonic() - started


def check_survives(proxy, protocol, name, cases):
    for label, faults, deadline in cases:
        label = f"{name} {label}"
        out, seconds = load(proxy, protocol, faults, deadline)
        check(f"{label}: loads", out.returncode == 0, out.stderr)
        got = [t["sha256"] for t in json.loads(out.stdout)["tensors"]] if out.returncode == 0 else []
        check(f"{label}: the manifest's values", got == want)
        check(f"{label}: within {deadline} s", seconds < deadline, f"{seconds:.1f} s")
        check(f"{label}: the faults happened", len(proxy.faults) == 0, f"{len(proxy.faults)} left")
    out, seconds = load(proxy, protocol, ["stall:0"] * 1000, 60)
    check(f"{name} stalls forever: fails", out.returncode != 0 and "gave up after" in out.stderr and
          out.stderr.count("\n") == 1, out.stderr)
    check(f"{name} stalls forever: within the deadline", seconds < 60, f"{seconds:.1f} s")


with server, FaultProxy(server.http_port) as proxy:
    check_survives(proxy, HTTP1, "HTTP/1.1", TRANSPORT_FAULTS + [("a 503 burst", ["503"] * 4, 20)])

    out, seconds = load(proxy, HTTP1, ["503"] * 1000, 30)
    check("503 forever: fails", out.returncode != 0 and "503" in out.stderr and "gave up after" in out.stderr and
          out.stderr.count("\n") == 1, out.stderr)
    check("503 forever: within the deadline", seconds < 30, f"{seconds:.1f} s")

    out, seconds = load(proxy, HTTP1, ["norange"] * 1000, 20)
    check("a server that ignores Range: loads, sequentially", out.returncode == 0, out.stderr)
    got = [t["sha256"] for t in json.loads(out.stdout)["tensors"]] if out.returncode == 0 else []
    check("a server that ignores Range: the manifest's values", got == want)
    check("a server that ignores Range: one streaming GET or two", proxy.connections <= 3, proxy.connections)

with Nginx(DATA) as h2_server, FaultProxy(h2_server.h2c_port) as proxy:
    check_survives(proxy, HTTP2, "h2c", TRANSPORT_FAULTS)

sys.exit(checks.finish())
