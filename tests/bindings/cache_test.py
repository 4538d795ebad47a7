#!/usr/bin/env python3
"""tests/bindings/cache_test.py RINGLOAD

The node-local cache (`--cache DIR`, issue #41) against real servers started here on 127.0.0.1:
nginx (its access log tells which requests each load sent), moto (S3, behind a proxy that
counts requests) and redis-server (its command statistics). Files are safetensors made here
with random bytes; every load's tensors are checked against the SHA-256 of the bytes written.
  1. http: the first load fills the entry; the second sends one HEAD and no range request; with
     --no-cache-validate it sends nothing; an ETag change is loaded from the server, never from
     the old entry, and the entry follows it;
  2. faults: a flipped byte in the entry is detected, its block read again (one range request)
     and rewritten; a load killed (-9) mid-fill, its entry's bytes then all overwritten with junk,
     leaves nothing a later load trusts; a full disk (RLIMIT_FSIZE) and a cache over its limit
     warn and load uncached; the least recently used entry is evicted for a new one;
  3. two processes loading at once fill the entry once (no block in two maps) and both load
     right; slices (--filter) keep what they read, the same slices then load with no range
     request, and a whole load reads only the rest from the server;
  4. s3://, gs:// (fake-gcs-server) and az:// (Shared Key) send only a HEAD the second time;
     redis:// no GETRANGE beyond the head; /dev/shm as
     the cache directory; Python's load_file(cache=..., cache_validate=False); a read-once
     group of two ranks keeps both shares, and its next start sends no range request.
"""
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from cli_runs import clean_env  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from nginx import Nginx  # noqa: E402

RINGLOAD = sys.argv[1]
checks = Checks()
check = checks.check
BLOCK = 64 << 10


def make_safetensors(path, seed, sizes):
    """A safetensors file of uint8 tensors of `sizes` bytes, random; returns {name: sha256}."""
    rng = random.Random(seed)
    header, datas, offset = {}, [], 0
    for i, size in enumerate(sizes):
        data = rng.randbytes(size)
        header[f"t{i}"] = {"dtype": "U8", "shape": [size], "data_offsets": [offset, offset + size]}
        datas.append(data)
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(datas))
    return {f"t{i}": hashlib.sha256(d).hexdigest() for i, d in enumerate(datas)}


def load(uri, cache, *extra, env=None, preexec=None):
    args = [RINGLOAD, "load", uri, "--json", "--sha256", "--slot-size", str(1 << 20)]
    if cache is not None:
        args += ["--cache", cache]
    return subprocess.run(args + list(extra), capture_output=True, text=True, timeout=300, env=env,
                          preexec_fn=preexec)


def digests(out):
    if out.returncode != 0:
        return None
    return {t["name"]: t["sha256"] for t in json.loads(out.stdout)["tensors"]}


def entries(cache):
    """The entries that hold a data file (a refused load may leave an empty one)."""
    if not os.path.isdir(cache):
        return []
    return sorted(d for d in os.listdir(cache) if len(d) == 32 and os.path.exists(os.path.join(cache, d, "data")))


def entry_dir(cache):
    found = entries(cache)
    return os.path.join(cache, found[0]) if len(found) == 1 else None


def map_blocks(entry):
    """{map file: [block, ...]} of an entry's committed maps (cache_entry.cpp's layout)."""
    maps = {}
    for name in sorted(os.listdir(entry)):
        if not name.startswith("map-"):
            continue
        raw = open(os.path.join(entry, name), "rb").read()
        at = 8 + 4 + 8
        for _ in range(2):  # uri, version
            (length,) = struct.unpack_from("<I", raw, at)
            at += 4 + length
        (count,) = struct.unpack_from("<Q", raw, at)
        at += 8
        maps[name] = [struct.unpack_from("<Q", raw, at + 12 * i)[0] for i in range(count)]
    return maps


class Log:
    """The nginx access log's new lines since the last call."""

    def __init__(self, server):
        self.server, self.seen = server, 0

    def new(self):
        lines = self.server.requests()
        fresh, self.seen = lines[self.seen:], len(lines)
        return fresh


def ranged(requests):
    return [r for r in requests if r[1] not in ("", "-")]


def http_cases(server, root, work):
    path = os.path.join(root, "a.safetensors")
    # Tensors that start and end inside blocks: fills assemble blocks from two reads.
    want = make_safetensors(path, 1, [3 << 20, 5 << 20, 77777, 2 << 20, 123456])
    url = server.http_url + "/a.safetensors"
    cache = os.path.join(work, "cache")
    log = Log(server)

    first = load(url, cache)
    check("http: the first load is right", digests(first) == want, first.stderr)
    check("http: the first load read ranges", len(ranged(log.new())) > 0)
    entry = entry_dir(cache)
    check("http: one entry, with a map", entry is not None and map_blocks(entry), str(entries(cache)))

    second = load(url, cache)
    requests = log.new()
    check("http: the second load is right", digests(second) == want, second.stderr)
    check("http: the second load sends no range request, one HEAD", not ranged(requests) and len(requests) == 1,
          str(requests))

    unchecked = load(url, cache, "--no-cache-validate")
    check("http: --no-cache-validate loads right", digests(unchecked) == want, unchecked.stderr)
    check("http: --no-cache-validate sends nothing", log.new() == [])

    # The file changes (nginx's ETag is its mtime and size): the server's bytes, never the entry's.
    changed = make_safetensors(path, 2, [3 << 20, 5 << 20, 77777, 2 << 20, 123456])
    later = time.time() + 30
    os.utime(path, (later, later))
    fresh = load(url, cache)
    check("http: a changed object loads its new bytes", digests(fresh) == changed, fresh.stderr)
    check("http: ... read from the server", len(ranged(log.new())) > 0)
    again = load(url, cache)
    check("http: the entry follows the change", digests(again) == changed and not ranged(log.new()), again.stderr)
    return url, cache, changed, log


def corruption_cases(url, cache, want, log):
    entry = entry_dir(cache)
    data = os.path.join(entry, "data")
    with open(data, "r+b") as f:
        f.seek(4 * BLOCK + 100)
        byte = f.read(1)
        f.seek(4 * BLOCK + 100)
        f.write(bytes([byte[0] ^ 0x40]))
    out = load(url, cache)
    requests = log.new()
    check("corrupt: a flipped byte never reaches a tensor", digests(out) == want, out.stderr)
    check("corrupt: ... is named on stderr", "does not match its CRC32" in out.stderr, out.stderr)
    check("corrupt: ... its block alone is read again",
          [r[1] for r in ranged(requests)] == [f"bytes={4 * BLOCK}-{5 * BLOCK - 1}"], str(requests))
    after = load(url, cache)
    check("corrupt: the rewritten block is served from the entry",
          digests(after) == want and not ranged(log.new()) and "CRC32" not in after.stderr, after.stderr)


def kill_case(server, root, work):
    path = os.path.join(root, "k.safetensors")
    want = make_safetensors(path, 3, [6 << 20, 6 << 20, 4 << 20])
    cache = os.path.join(work, "kill-cache")
    with FaultProxy(server.http_port) as proxy:
        # 8 connections at 400 kB/s: the 16 MiB take 5 s, and the load is killed after 2.
        proxy.schedule(["slow:400000"] * 64)
        url = f"http://127.0.0.1:{proxy.port}/k.safetensors"
        process = subprocess.Popen([RINGLOAD, "load", url, "--cache", cache, "--slot-size", str(1 << 20)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
        process.send_signal(signal.SIGKILL)
        process.wait()
        proxy.schedule([])
        entry = entry_dir(cache)
        check("kill -9: the fill had begun", entry is not None and os.path.exists(os.path.join(entry, "data")))
        if entry is None:
            return
        committed = sum(len(b) for b in map_blocks(entry).values())
        blocks = (os.path.getsize(path) + BLOCK - 1) // BLOCK
        check("kill -9: the fill was cut short", committed < blocks, f"{committed} of {blocks} blocks committed")
        # Whatever the killed fill left, junk in every byte must not load: blocks a map names
        # (committed when the load paused) no longer match their CRC; the rest no map names.
        with open(os.path.join(entry, "data"), "r+b") as f:
            f.write(b"\xa5" * os.fstat(f.fileno()).st_size)
        out = load(url, cache)
        check("kill -9: the next load is right", digests(out) == want, out.stderr)
        check("kill -9: blocks the killed fill committed were caught by their CRC",
              committed == 0 or "does not match its CRC32" in out.stderr, f"{committed} committed; {out.stderr}")
        third = load(url, cache)
        check("kill -9: then the entry serves", digests(third) == want and "CRC32" not in third.stderr,
              third.stderr)


def full_disk_case(server, root, work):
    path = os.path.join(root, "f.safetensors")
    want = make_safetensors(path, 4, [4 << 20, 4 << 20])
    url = server.http_url + "/f.safetensors"
    cache = os.path.join(work, "full-cache")
    first = load(url, cache)
    entry = entry_dir(cache)
    for name in os.listdir(entry):
        if name.startswith("map-"):
            os.unlink(os.path.join(entry, name))  # as after a crash: data sized, nothing committed

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    # The entry's data file is there, sized: the writes past 1 MiB fail.
    out = load(url, cache, preexec=small_disk)
    check("full disk: the load is right when writes fail", digests(first) == want and digests(out) == want,
          out.stderr)
    check("full disk: one warning says the cache could not write", out.stderr.count("cannot write") == 1 and
          "without caching" in out.stderr, out.stderr)
    # A new entry: sizing its data file fails.
    fresh = load(url, os.path.join(work, "full-cache-2"), preexec=small_disk)
    check("full disk: a new entry that cannot be made warns and loads",
          digests(fresh) == want and "File too large: not cached" in fresh.stderr, fresh.stderr)
    committed = map_blocks(entry)
    check("full disk: no block past the limit is committed",
          all(b * BLOCK + BLOCK <= (1 << 20) for blocks in committed.values() for b in blocks), str(committed))


def limit_cases(server, root, work):
    cache = os.path.join(work, "limit-cache")
    urls, wants = [], []
    for name, seed in (("x", 5), ("y", 6)):
        path = os.path.join(root, name + ".safetensors")
        wants.append(make_safetensors(path, seed, [4 << 20, 4 << 20]))
        urls.append(server.http_url + f"/{name}.safetensors")
    limit = str(12 << 20)
    first = load(urls[0], cache, "--cache-max-bytes", limit)
    kept_first = entries(cache)
    second = load(urls[1], cache, "--cache-max-bytes", limit)
    kept_second = entries(cache)
    check("limit: both load right", digests(first) == wants[0] and digests(second) == wants[1], second.stderr)
    check("limit: the least recently used entry made room",
          len(kept_first) == 1 and len(kept_second) == 1 and kept_first != kept_second, f"{kept_first} {kept_second}")
    small = load(urls[0], cache, "--cache-max-bytes", str(4 << 20))
    check("limit: an object over the limit loads uncached, with a warning",
          digests(small) == wants[0] and "cache_max_bytes" in small.stderr and entries(cache) == kept_second, small.stderr)


def concurrent_case(server, root, work):
    path = os.path.join(root, "c.safetensors")
    want = make_safetensors(path, 7, [5 << 20, 5 << 20, 3 << 20])
    cache = os.path.join(work, "shared-cache")
    with FaultProxy(server.http_port) as proxy:
        proxy.schedule(["slow:1000000"] * 128)  # 8 MB/s: the two loads overlap
        url = f"http://127.0.0.1:{proxy.port}/c.safetensors"
        args = [RINGLOAD, "load", url, "--json", "--sha256", "--cache", cache, "--slot-size", str(1 << 20)]
        both = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in both]
    results = [subprocess.CompletedProcess(args, p.returncode, o, e) for p, (o, e) in zip(both, outs)]
    check("concurrent: both loads are right", all(digests(r) == want for r in results),
          " | ".join(r.stderr for r in results))
    maps = map_blocks(entry_dir(cache))
    listed = [b for blocks in maps.values() for b in blocks]
    writers = {name.split("-")[1] for name in maps}
    check("concurrent: no block was filled twice", len(listed) == len(set(listed)), f"{len(listed)} listed")
    check("concurrent: the entry is whole afterwards", len(set(listed)) == (os.path.getsize(path) + BLOCK - 1) // BLOCK,
          f"{len(set(listed))} blocks from writers {writers}")
    print(f"concurrent: blocks filled by {len(writers)} process(es): "
          + ", ".join(f"{w}: {sum(len(b) for n, b in maps.items() if n.split('-')[1] == w)}" for w in writers))


def slice_cases(server, url, root, work, log):
    path = os.path.join(root, "s.safetensors")
    want = make_safetensors(path, 8, [2 << 20, 3 << 20, 1 << 20, 4 << 20])
    url = server.http_url + "/s.safetensors"
    cache = os.path.join(work, "slice-cache")
    log.new()
    part = load(url, cache, "--filter", "^t[13]$")
    sliced = {k: v for k, v in want.items() if k in ("t1", "t3")}
    check("slices: a filtered load is right", digests(part) == sliced, part.stderr)
    log.new()
    again = load(url, cache, "--filter", "^t[13]$")
    check("slices: the same slices again send no range request", digests(again) == sliced and not ranged(log.new()),
          again.stderr)
    whole = load(url, cache)
    requests = ranged(log.new())
    check("slices: a whole load after them is right", digests(whole) == want, whole.stderr)
    asked = 0
    for _, header, _ in requests:
        first, last = header.removeprefix("bytes=").split("-")
        asked += int(last) - int(first) + 1
    held = (3 << 20) + (4 << 20)
    check("slices: ... and reads from the server about what the entry lacked",
          0 < asked <= os.path.getsize(path) - held + 4 * BLOCK, f"{asked} bytes asked")


def s3_case(root, work):
    from s3_server import MotoServer, S3FaultProxy
    path = os.path.join(root, "a.safetensors")
    want = make_safetensors(path, 9, [3 << 20, 1 << 20])
    home = tempfile.mkdtemp(dir=work)
    with MotoServer() as s3:
        admin = s3.client()
        admin.create_bucket(Bucket="models")
        admin.upload_file(path, "models", "a.safetensors")
        key, secret = s3.create_user()
        s3.require_signatures(True)
        seen = []
        with S3FaultProxy(s3.port, lambda method, target: seen.append(method) and False) as proxy:
            env = clean_env(home, ("AWS_",), AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret,
                            AWS_REGION="us-east-1")
            cache = os.path.join(work, "s3-cache")
            uri = "s3://models/a.safetensors"
            first = load(uri, cache, "--s3-endpoint", proxy.url, env=env)
            gets = seen.count("GET")
            seen.clear()
            second = load(uri, cache, "--s3-endpoint", proxy.url, env=env)
            check("s3: both loads are right", digests(first) == want and digests(second) == want,
                  first.stderr + second.stderr)
            check("s3: the second load sends one HEAD and no GET", gets > 0 and seen == ["HEAD"], str(seen))


def gcs_case(root, work):
    """gs:// against fake-gcs-server (anonymous), behind a relay that records each request's method."""
    from gcs_server import FakeGcsServer
    from s3_server import S3FaultProxy
    path = os.path.join(root, "gs.safetensors")
    want = make_safetensors(path, 14, [3 << 20, 1 << 20])
    env = clean_env(tempfile.mkdtemp(dir=work), ("GOOGLE_", "STORAGE_", "GCE_"))
    with FakeGcsServer() as gcs:
        gcs.create_bucket("models")
        gcs.upload("models", "gs.safetensors", path)
        seen = []
        with S3FaultProxy(gcs.port, lambda method, target: seen.append(method) and False) as proxy:
            cache, uri = os.path.join(work, "gcs-cache"), "gs://models/gs.safetensors"
            args = ("--gcs-endpoint", proxy.url, "--gcs-anonymous")
            first = load(uri, cache, *args, env=env)
            gets = seen.count("GET")
            seen.clear()
            second = load(uri, cache, *args, env=env)
            check("gs: both loads are right", digests(first) == want and digests(second) == want,
                  first.stderr + second.stderr)
            check("gs: the second load sends one HEAD and no GET", gets > 0 and seen == ["HEAD"], str(seen))


def azure_case(root, work):
    """az:// against tests/support/azure_server.py (Shared Key checked by the SDK's code): the
    HEAD is signed as a HEAD."""
    import base64
    from azure_server import AzureServer
    path = os.path.join(root, "az.safetensors")
    want = make_safetensors(path, 15, [3 << 20, 1 << 20])
    key = base64.b64encode(bytes(range(64))).decode()
    env = clean_env(tempfile.mkdtemp(dir=work), ("AZURE_",))
    with AzureServer("ringloadtest", key) as azure:
        azure.create_container("models")
        azure.put("models", "az.safetensors", path)
        cache, uri = os.path.join(work, "azure-cache"), "az://ringloadtest/models/az.safetensors"
        args = ("--azure-endpoint", azure.endpoint, "--azure-account-key", key)
        first = load(uri, cache, *args, env=env)
        filled = list(azure.requests)
        second = load(uri, cache, *args, env=env)
        asked = [(r["method"], r["range"], r["status"]) for r in azure.requests[len(filled):]]
        check("az: both loads are right", digests(first) == want and digests(second) == want,
              first.stderr + second.stderr)
        check("az: the second load sends one signed HEAD and no GET",
              any(r["method"] == "GET" for r in filled) and [(m, s) for m, _, s in asked] == [("HEAD", 200)],
              str(asked))


def redis_case(root, work):
    from redis_server import RedisServer
    path = os.path.join(root, "r.safetensors")
    want = make_safetensors(path, 10, [3 << 20, 1 << 20])
    with RedisServer() as redis_server:
        uri = redis_server.uri + "/model"
        put = subprocess.run([RINGLOAD, "convert", path, uri], capture_output=True, text=True, timeout=120)
        check("redis: the model is put", put.returncode == 0, put.stderr)
        client = redis_server.client()

        def getranges():
            return client.info("commandstats").get("cmdstat_getrange", {}).get("calls", 0)

        cache = os.path.join(work, "redis-cache")
        before = getranges()
        first = load(uri, cache)
        during_first = getranges() - before
        before = getranges()
        second = load(uri, cache)
        during_second = getranges() - before
        check("redis: both loads are right", digests(first) == want and digests(second) == want,
              first.stderr + second.stderr)
        # The version check reads the keys' lengths and the head (the header): a GETRANGE or two.
        check("redis: the second load reads only the head", during_second <= 2 < during_first,
              f"{during_first} then {during_second} GETRANGEs")
        client.append("model:0", b"")  # unchanged bytes: same version
        client.setrange("model:0", 10, b"\x00")  # the header's bytes change: a new version
        third = load(uri, cache)
        check("redis: a changed header is a new version", third.returncode != 0 or
              during_second < getranges() - before - during_second, third.stderr)


def shm_case(server, root):
    if not os.path.isdir("/dev/shm"):
        print("note: no /dev/shm here; its case is left out")
        return
    cache = tempfile.mkdtemp(prefix="ringload-cache-test-", dir="/dev/shm")
    try:
        path = os.path.join(root, "m.safetensors")
        want = make_safetensors(path, 11, [2 << 20, 2 << 20])
        url = server.http_url + "/m.safetensors"
        log = Log(server)
        log.new()
        first = load(url, cache)
        log.new()
        second = load(url, cache)
        check("/dev/shm: both loads are right, the second from memory",
              digests(first) == want and digests(second) == want and not ranged(log.new()), second.stderr)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def python_files(server, root, work, name, seed, sizes):
    """(want, url, cache, log) for a Python-driven case, or None (with a note) where the package
    or torch is not in this preset."""
    try:
        import ringload  # noqa: F401
        import torch  # noqa: F401
    except ImportError as error:
        print(f"python loads ({name}) not checked: the package or torch is not in this preset ({error})")
        return None
    want = make_safetensors(os.path.join(root, name + ".safetensors"), seed, sizes)
    log = Log(server)
    log.new()
    return want, server.http_url + f"/{name}.safetensors", os.path.join(work, name + "-cache"), log


def tensor_digests(tensors):
    return {k: hashlib.sha256(v.numpy().tobytes()).hexdigest() for k, v in tensors.items()}


def python_case(server, root, work):
    files = python_files(server, root, work, "p", 12, [1 << 20, 3 << 20])
    if files is None:
        return
    import ringload
    want, url, cache, log = files
    first = ringload.load_file(url, cache=cache)
    filled = log.new()
    second = ringload.load_file(url, cache=cache, cache_validate=False)
    got = [tensor_digests(t) for t in (first, second)]
    check("python: load_file(cache=...) is right", got == [want, want], str(got))
    check("python: cache_validate=False sends nothing", ranged(filled) and log.new() == [])


def group_rank(rank, world, init, url, cache, out):
    """One rank of a read-once group (torch.distributed, gloo): its share read, every tensor got."""
    import torch.distributed as dist
    import ringload
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    tensors = ringload.load_file(url, process_group=dist.group.WORLD, cache=cache)
    with open(os.path.join(out, f"{rank}.json"), "w") as file:
        json.dump(tensor_digests(tensors), file)
    dist.destroy_process_group()


def group_case(server, root, work):
    """Two ranks reading once per group: each keeps its share; the next start reads none."""
    files = python_files(server, root, work, "g", 13, [3 << 20, 2 << 20, 5 << 20, 1 << 20])
    if files is None:
        return
    import torch.multiprocessing as mp
    want, url, cache, log = files
    path = os.path.join(root, "g.safetensors")
    results = []
    for start in range(2):
        init = os.path.join(work, f"group-init-{start}")
        mp.spawn(group_rank, args=(2, init, url, cache, work), nprocs=2, join=True)
        got = [json.load(open(os.path.join(work, f"{rank}.json"))) for rank in range(2)]
        results.append((all(g == want for g in got), ranged(log.new())))
    maps = map_blocks(entry_dir(cache))
    check("group: every rank gets every tensor, both starts", results[0][0] and results[1][0])
    # A map per commit (map-PID-TIME-SEQ): a rank commits at the end of each of its loads, so it
    # may leave more than one (the block its open read, then its share).
    writers = {name.split("-")[1] for name in maps}
    check("group: the two ranks kept their shares", len(writers) == 2 and
          len({b for blocks in maps.values() for b in blocks}) == (os.path.getsize(path) + BLOCK - 1) // BLOCK,
          str({name: len(blocks) for name, blocks in maps.items()}))
    check("group: the second start sends no range request", results[0][1] and not results[1][1], str(results[1][1]))


def main():
    work = tempfile.mkdtemp(prefix="ringload-cache-test-")
    os.chmod(work, 0o755)  # nginx's worker reads the files under it
    root = os.path.join(work, "www")
    os.makedirs(root)
    try:
        with Nginx(root, access_log=True) as server:
            url, cache, want, log = http_cases(server, root, work)
            corruption_cases(url, cache, want, log)
            kill_case(server, root, work)
            full_disk_case(server, root, work)
            limit_cases(server, root, work)
            concurrent_case(server, root, work)
            slice_cases(server, url, root, work, log)
            shm_case(server, root)
            python_case(server, root, work)
            group_case(server, root, work)
        s3_case(root, work)
        gcs_case(root, work)
        azure_case(root, work)
        redis_case(root, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(checks.finish())


if __name__ == "__main__":
    main()
