"""Skips, each with its reason, the upstream tests that cannot run here or that test
tensorizer's internals rather than its API (the test files stay as upstream wrote them), gives
test_redis a start_redis that waits for the server as long as a busy machine needs, lets
test_large_unbuffered_tensor count the page cache as free memory, and makes moto importable: test_stream_io.py, which test_serialization.py imports start_redis from,
imports moto at its top, and moto lives in its own venv (run.py finds it).

test_s3_multiple_readers' subtest "Deserializing from a CURLStreamFile" names CoreWeave's
endpoint itself, which cannot be reached here: tensorizer's stream_io.open_stream fails (an
OSError of exactly that type and words) before any deserializer is made, with the real
tensorizer as with ringload. That failure, and only it, is expected (xfail); the test's other
subtest still has to pass.

In the ringload run it also checks that `tensorizer` is the shim, with ringload's classes."""
import os
import sys

import pytest

_moto_site = os.environ.get("TENSORIZER_UPSTREAM_MOTO_SITE")
if _moto_site:
    sys.path.append(_moto_site)  # last: the venv's own boto3 and botocore stay first

_REAL = os.environ.get("TENSORIZER_UPSTREAM_REAL") == "1"

# Tests that patch tensorizer's internals: what they patch is not in ringload's path.
_INTERNALS = {
    "test_verification_fail": "patches tensorizer.serialization.TensorHash to fake a stored hash; ringload's "
                              "hashes are checked in its engine (tests/bindings/python_api_test.py corrupts files)",
}


class _IsUnreachableEndpoint(type):
    def __instancecheck__(cls, error):
        return type(error) is OSError and str(error).startswith("Failed to open stream")


class UnreachableEndpoint(metaclass=_IsUnreachableEndpoint):
    """Matches (isinstance) stream_io.open_stream's failure to reach an endpoint, nothing else."""


def _patient_start_redis(port=6381):
    """upstream's start_redis, waiting until the server answers a PING (up to 60 s) instead of
    for its fifth log line within 1-5 s, which a busy 2-core machine sometimes misses ("Redis
    server did not start" with the server still starting), and without snapshots. Returns what
    upstream's returns."""
    import subprocess
    import time

    import redis
    try:  # upstream's fixed port: a server left on it would answer for ours
        redis.Redis(host="localhost", port=port, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError:
        pass
    else:
        raise Exception(f"port {port} already holds a Redis server (left by an earlier run?): stop it first")
    # No snapshots: with redis' default "save" rules a background save that fails on a busy
    # machine turns every later write into a MISCONF error; the test needs no persistence.
    process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--stop-writes-on-bgsave-error", "no"],
                               stdout=subprocess.PIPE)
    client = redis.Redis(host="localhost", port=port, db=0)
    deadline = time.monotonic() + 60
    while True:
        try:
            client.ping()
        except redis.exceptions.ConnectionError:
            pass
        else:
            if process.poll() is None:  # ours answered, not another server on the port
                return process, client
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise Exception(f"Redis server did not start on port {port} (another server holding the port "
                            "stops it: upstream's fixed port)")
        time.sleep(0.1)


def _count_page_cache_as_free(utils):
    """test_large_unbuffered_tensor skips unless CPUMemoryUsage.now().free, psutil's MemFree,
    holds its 4.8 GiB: after a build the page cache fills this machine's RAM, and the test
    skipped with 20 GB available. Here `free` is what the kernel can hand out (MemAvailable),
    which the page cache gives way to."""
    import psutil
    measure = utils.CPUMemoryUsage.now.__func__

    def now(cls):
        usage = measure(cls)
        return cls(usage.maxrss, psutil.virtual_memory().available)
    utils.CPUMemoryUsage.now = classmethod(now)


def pytest_collection_modifyitems(config, items):
    # test_serialization.py bound upstream's start_redis at import; it uses ours (above).
    serialization = sys.modules.get("test_serialization")
    if serialization is not None and hasattr(serialization, "start_redis"):
        serialization.start_redis = _patient_start_redis
    if serialization is not None and hasattr(serialization, "utils"):
        _count_page_cache_as_free(serialization.utils)
    for item in items:
        if item.name == "test_s3_multiple_readers":
            item.add_marker(pytest.mark.xfail(
                raises=UnreachableEndpoint, strict=False,
                reason="its CURLStreamFile subtest opens object.ord1.coreweave.com, which cannot be reached here"))
        if item.name in _INTERNALS and not _REAL:
            item.add_marker(pytest.mark.skip(reason=_INTERNALS[item.name]))


def pytest_configure(config):
    if _REAL:
        return
    import ringload
    import tensorizer
    assert tensorizer.TensorDeserializer is ringload.TensorDeserializer, \
        f"tensorizer is {tensorizer.__file__}, not the shim"
    assert tensorizer.TensorSerializer is ringload.TensorSerializer
