#!/usr/bin/env python3
"""bench/distributed_load.py [--ranks 1,2,4] [--mb N] [--rate R]: read once per group vs every rank reading it all.

R ranks (gloo, on this machine) load one safetensors file over HTTP from a real nginx whose
every connection is capped at --rate bytes/s (nginx's limit_rate), each rank with one
connection: the source, not this machine's cores, is the limit, as a node's network is for
real nodes. Timed from the moment every rank starts loading (a barrier) until every rank
holds every tensor (a second barrier):

  group    ringload.load_file(url, process_group=WORLD): each rank reads its share, the
           ranks broadcast what they read (issue #26)
  each     ringload.load_file(url) on every rank: R copies through the source

Run with .venv/bin/python and PYTHONPATH=build/release/bindings/python:

    PYTHONPATH=build/release/bindings/python .venv/bin/python bench/distributed_load.py

Prints one line per run and a table: seconds per R and mode, and each/group (the goal of
#26: close to R).
"""
import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

NGINX_CONFIG = """
daemon off;
worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    sendfile on;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        limit_rate {rate};
    }}
}}
"""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--mb", type=int, default=256, help="the model's size in MiB")
    parser.add_argument("--rate", type=int, default=64 << 20, help="bytes/s per connection (nginx limit_rate)")
    parser.add_argument("--runs", type=int, default=2)
    return parser.parse_args()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, init_file, url, mode, out):
    import torch.distributed as dist
    import ringload
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=600))
    dist.barrier()
    start = time.perf_counter()
    group = dist.group.WORLD if mode == "group" else None
    with ringload.TensorDeserializer(url, device="cpu", connections=1, process_group=group) as loaded:
        tensors = loaded.flat_tensors()
        read = loaded.total_bytes_read
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        with open(out, "w") as f:
            f.write(f"{seconds} {read} {len(tensors)}\n")
    dist.destroy_process_group()


def run(world, url, mode):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory(prefix="ringload-dist-bench-") as folder:
        out = os.path.join(folder, "out")
        context = mp.get_context("spawn")
        processes = [context.Process(target=rank_main, args=(r, world, os.path.join(folder, "init"), url, mode, out))
                     for r in range(world)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
            if process.exitcode != 0:
                raise SystemExit(f"a rank of {mode} with {world} ranks failed (exit code {process.exitcode})")
        with open(out) as f:
            seconds, read, _ = f.read().split()
        return float(seconds), int(read)


def main():
    args = parse_args()
    import torch
    import safetensors.torch
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    root = tempfile.mkdtemp(prefix="ringload-dist-bench-root-")
    prefix = tempfile.mkdtemp(prefix="ringload-dist-bench-nginx-")
    os.chmod(root, 0o755)
    generator = torch.Generator().manual_seed(1)
    # Few large tensors: nginx's limit_rate lets a response's first megabytes through at once
    # (its socket buffers), so only large range requests feel the cap.
    count = 8
    rows = (args.mb << 20) // count // (1024 * 4)
    tensors = {f"layers.{i}.weight": torch.randn(rows, 1024, generator=generator) for i in range(count)}
    path = os.path.join(root, "model.safetensors")
    safetensors.torch.save_file(tensors, path)
    os.chmod(path, 0o644)
    port = free_port()
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(NGINX_CONFIG.format(prefix=prefix, root=root, port=port, rate=args.rate))
    nginx = subprocess.Popen([binary, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")])
    url = f"http://127.0.0.1:{port}/model.safetensors"
    try:
        time.sleep(0.5)
        results = {}
        for world in [int(r) for r in args.ranks.split(",")]:
            for mode in ("group", "each"):
                if world == 1 and mode == "each":
                    continue  # the same load as group with one rank
                for _ in range(args.runs):
                    seconds, read = run(world, url, mode)
                    results.setdefault((world, mode), []).append(seconds)
                    print(f"{world} ranks {mode:5} {seconds:.2f} s (rank 0 read {read / 1e6:.1f} MB)", flush=True)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(prefix, ignore_errors=True)
    print(f"\n{args.mb} MiB safetensors over HTTP, {args.rate / 1e6:.0f} MB/s per connection, one connection "
          f"per rank, {args.runs} runs each (median [min-max] seconds)\n")
    print("| ranks | read once (group) | every rank reads it all | all / group |")
    print("|---|---|---|---|")
    for world in sorted({w for w, _ in results}):
        group = results[(world, "group")]
        each = results.get((world, "each"), group)
        print(f"| {world} | {statistics.median(group):.2f} [{min(group):.2f}-{max(group):.2f}] | "
              f"{statistics.median(each):.2f} [{min(each):.2f}-{max(each):.2f}] | "
              f"{statistics.median(each) / statistics.median(group):.2f} |")


if __name__ == "__main__":
    main()
