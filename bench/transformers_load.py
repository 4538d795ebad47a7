#!/usr/bin/env python3
"""bench/transformers_load.py: transformers' from_pretrained alone vs with ringload doing the reads.

    PYTHONPATH=build/release/bindings/python .venv-vllm/bin/python bench/transformers_load.py \\
        [--layers 16 --hidden 512] [--runs 5] [--cache hot|cold] [--device cpu|cuda] [--dtype float32]

Makes a Llama-shaped model with random weights (transformers' LlamaForCausalLM saved as one
safetensors file) in --work once, then loads it in a fresh process per load, the two loaders
alternating: "own" (from_pretrained as it is) and "ringload" (inside
ringload.transformers_reads.reading(), prefetch only with --prefetch). Each child times from_pretrained until every parameter's
bytes were read (a sum over each parameter, so that the lazily mapped pages are counted; on a
GPU, until torch.cuda.synchronize()), and reports the peak RSS, and on a GPU the most device
memory allocated beyond the model's own bytes. --cache cold drops the page cache before each
load (root), hot reads the file once before. Prints a table of medians and spreads and the
ratio ringload / own. Every load's parameters are compared (a checksum) with the first's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from page_cache import prepare_page_cache

CHILD = r'''
import json, os, sys, time
loader, folder, device, dtype_name = sys.argv[1:5]
import torch
from transformers import AutoModelForCausalLM
dtype = getattr(torch, dtype_name)
kwargs = {"dtype": dtype}
if device != "cpu":
    kwargs["device_map"] = device
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
started = time.perf_counter()
if loader == "ringload":
    import ringload.transformers_reads
    with ringload.transformers_reads.reading(prefetch=os.environ.get("RINGLOAD_BENCH_PREFETCH") == "1"):
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
else:
    model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
checksum = 0.0
with torch.no_grad():
    for parameter in model.parameters():
        checksum += float(parameter.float().sum())
if device != "cpu":
    torch.cuda.synchronize()
seconds = time.perf_counter() - started
model_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
extra = torch.cuda.max_memory_allocated() - model_bytes if device != "cpu" else None
with open("/proc/self/status") as f:
    rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print("RESULT " + json.dumps({"seconds": seconds, "checksum": checksum, "peak_rss": rss,
                              "extra_device_bytes": extra}))
'''


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/ringload-transformers-bench")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", choices=("hot", "cold"), default="hot")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--prefetch", action="store_true",
                        help="reading(prefetch=True): open and map the file on a thread while the model is built")
    return parser.parse_args()


def make_model(args):
    folder = os.path.join(args.work, f"llama-{args.layers}x{args.hidden}")
    if os.path.exists(os.path.join(folder, "model.safetensors")):
        return folder
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=32000, hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                         num_hidden_layers=args.layers, num_attention_heads=max(1, args.hidden // 64),
                         num_key_value_heads=max(1, args.hidden // 256), max_position_embeddings=256,
                         tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(getattr(torch, args.dtype))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def run_one(args, folder, loader):
    prepare_page_cache(os.path.join(folder, "model.safetensors"), args.cache)
    env = dict(os.environ, RINGLOAD_BENCH_PREFETCH="1" if args.prefetch else "0")
    done = subprocess.run([sys.executable, "-c", CHILD, loader, folder, args.device, args.dtype],
                          capture_output=True, text=True, timeout=900, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"transformers_load: {loader} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[0][len("RESULT "):])


def main():
    args = parse_args()
    if args.cache == "cold" and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        raise SystemExit("transformers_load: --cache cold needs root (the page cache is dropped)")
    folder = make_model(args)
    size = os.path.getsize(os.path.join(folder, "model.safetensors"))
    loaders = ("own", "ringload")
    results = {loader: [] for loader in loaders}
    reference = None
    for run in range(args.runs):
        for loader in (loaders if run % 2 == 0 else loaders[::-1]):
            result = run_one(args, folder, loader)
            reference = result["checksum"] if reference is None else reference
            if result["checksum"] != reference:
                raise SystemExit(f"transformers_load: {loader} loaded other weights (checksum {result['checksum']}, "
                                 f"the first load {reference})")
            results[loader].append(result)
            extra = result["extra_device_bytes"]
            print(f"{loader:9} {result['seconds']:.3f} s  peak RSS {result['peak_rss'] / 2**20:.0f} MiB"
                  + (f"  extra device {extra / 2**20:.0f} MiB" if extra is not None else ""), flush=True)
    print(f"\nLlama {args.layers} layers x {args.hidden}, {args.dtype}, {size / 1e6:.0f} MB, device {args.device}, "
          f"{args.cache} page cache, prefetch {'on' if args.prefetch else 'off'}, {args.runs} runs each, one process per load, until every parameter was read\n")
    print("| loader | seconds, median [min-max] | / own | peak RSS MiB | extra device MiB |")
    print("|---|---|---|---|---|")
    own = statistics.median(r["seconds"] for r in results["own"])
    for loader in loaders:
        times = [r["seconds"] for r in results[loader]]
        median = statistics.median(times)
        rss = statistics.median(r["peak_rss"] for r in results[loader]) / 2**20
        extra = [r["extra_device_bytes"] for r in results[loader] if r["extra_device_bytes"] is not None]
        extra_text = f"{max(extra) / 2**20:.0f}" if extra else "-"
        print(f"| {loader} | {median:.3f} [{min(times):.3f}-{max(times):.3f}] | {median / own:.2f} | {rss:.0f} | "
              f"{extra_text} |")


if __name__ == "__main__":
    main()
