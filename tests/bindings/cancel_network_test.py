#!/usr/bin/env python3
"""tests/bindings/cancel_network_test.py RINGLOAD DATA_DIR PACKAGE_DIR: a cancelled network load stops now (issue #27, part 3).

A load over HTTP/1.1, h2c or Redis whose connections are a slow one (2 MB/s) and a stalled one
(our proxy, tests/support/fault_proxy.py, in front of a real nginx or redis-server) is cancelled
by its progress callback. The load must end with the callback's exception within 3 s, although
its network timeout is 20 s with 3 attempts: the reads in flight are abandoned (their
connections closed), not waited for until the stalled one times out and is retried. The same
deserializer then loads the whole file, its hashes right. Exits 77 without nginx, redis-server
or the package.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from nginx import Nginx  # noqa: E402
from redis_server import RedisServer  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
PACKAGE = sys.argv[3] if len(sys.argv) > 3 else ""
if not PACKAGE:
    print("SKIP: this build has no Python package (the sanitizer presets)")
    sys.exit(77)
sys.path.insert(0, PACKAGE)
try:
    import ringload  # noqa: E402
    import torch  # noqa: E402
    server, redis_server = Nginx(DATA), RedisServer()
except (ImportError, RuntimeError) as error:
    print(f"SKIP: {error}")
    sys.exit(77)

checks = Checks()
check = checks.check
FILE = "large_mixed_v2.tensors"  # 8 MB
want = sorted(t["sha256"] for t in json.load(open(os.path.join(DATA, "tensorizer", FILE + ".json")))["tensors"])
NETWORK = {"connections": 2, "timeout": 20.0, "attempts": 3, "range_size": 1 << 20}
# The first connection (open's, then reused) is slow, so that progress is reported while it
# reads; every later one stalls after 100 KB of its first answer (reads that wait for a
# connection when the load stops must not take a new one: it would stall too).
FAULTS = ["slow:2000000"] + ["stall:100000"] * 12


class Stop(Exception):
    pass


def cancelled_load(label, proxy, url, **options):
    proxy.schedule(FAULTS)
    raised_at = []

    def stop(bytes_done, *rest):
        if bytes_done <= NETWORK["range_size"]:
            return  # the first window is read alone: cancel once both connections have a read
        raised_at.append(time.monotonic())
        raise Stop("cancelled by the test")

    deserializer = ringload.TensorDeserializer(url, device="cpu", lazy_load=True, verify_hash=True, progress=stop,
                                               **NETWORK, **options)
    started = time.monotonic()
    try:
        deserializer.flat_tensors()
        outcome = "finished"
    except Stop:
        outcome = "cancelled"
    ended = time.monotonic()
    stopped_in = ended - raised_at[0] if raised_at else None
    print(f"  {label}: {outcome} after {ended - started:.2f} s, {stopped_in if stopped_in is None else round(stopped_in, 2)} s "
          f"after the callback raised, {proxy.connections} connections")
    check(f"{label}: the callback's exception ends the load", outcome == "cancelled", outcome)
    check(f"{label}: within 3 s of the cancel (timeout 20 s x 3 attempts)", stopped_in is not None and stopped_in < 3,
          f"{stopped_in} s")

    # The same deserializer, the faults gone: the whole file, right.
    proxy.schedule([])
    deserializer.reads.progress = None  # its FileReads (ringload/ground/file_reads.py): no callback now
    try:
        got = sorted(sha256_of(t) for t in deserializer.flat_tensors().values())
    except Exception as error:  # noqa: BLE001 - reported as the check's detail
        got = repr(error)
    check(f"{label}: the same deserializer then loads the whole file, right", got == want, str(got)[:300])
    deserializer.close()


def sha256_of(tensor):
    return hashlib.sha256(tensor.contiguous().view(-1).view(torch.uint8).numpy().tobytes()).hexdigest()


with server:
    with FaultProxy(server.http_port) as proxy:
        cancelled_load("HTTP/1.1", proxy, f"{proxy.url}/tensorizer/{FILE}", http_version="1.1")
    with FaultProxy(server.h2c_port) as proxy:
        cancelled_load("h2c", proxy, f"{proxy.url}/tensorizer/{FILE}", http_version="2", streams=1)
with redis_server, FaultProxy(redis_server.port) as proxy:
    published = subprocess.run([RINGLOAD, "convert", os.path.join(DATA, "tensorizer", FILE),
                                f"{redis_server.uri}/model"], capture_output=True, text=True, timeout=120)
    check("the fixture is published to redis", published.returncode == 0, published.stderr)
    cancelled_load("Redis", proxy, f"redis://127.0.0.1:{proxy.port}/model")

sys.exit(checks.finish())
