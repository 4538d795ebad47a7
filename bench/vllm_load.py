#!/usr/bin/env python3
"""bench/vllm_load.py [--runs N] [--loaders ...]: weight loading inside a real vLLM, loader by loader.

Run with .venv-vllm/bin/python (scripts/setup_vllm.sh) and PYTHONPATH=build/release/bindings/python,
as root (the page cache is dropped right before each load):

    PYTHONPATH=build/release/bindings/python .venv-vllm/bin/python bench/vllm_load.py

It makes a Llama-shaped model of 1.36 GB in float32 with random weights (`ringload bench model
--shape llama-1b`, HF Llama names; config.json and a small tokenizer written here) in --work,
then starts vLLM (CPU, `LLM(...)`, one rank) once per loader and run, the loaders alternating,
and times each loader the same way: a vLLM plugin (a `vllm.general_plugins` entry point in a
dist-info written into --work and put on PYTHONPATH) wraps BaseModelLoader.load_model in vLLM's
worker, drops the page cache, and times the loader's load_weights call. Every run's greedy tokens
must equal the first run's.

Loaders: default (vLLM's safetensors loader, lazy), prefetch (its
safetensors_load_strategy="prefetch"), ringload (`--load-format ringload`, the same safetensors
file). Not run, with the reason printed: Run:ai's streamer (its package is not in .venv-vllm) and
vLLM's tensorizer loader (it needs a file written by vLLM's own tensorize_vllm_model, with vLLM's
fused module names, and a CPU fix: ../shared/docs/vllm.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LOADERS = {
    "default": {"load_format": "safetensors"},
    "prefetch": {"load_format": "safetensors", "safetensors_load_strategy": "prefetch"},
    "ringload": {"load_format": "ringload"},
}
NOT_RUN = {
    "runai_streamer": "Run:ai's runai-model-streamer package is not installed in .venv-vllm",
    "tensorizer": "vLLM's tensorizer loader needs a file written by vLLM's tensorize_vllm_model (fused names)",
}

# The timing plugin, loaded by vLLM in each of its processes: in the worker it times the
# loader's load_weights, after dropping the page cache, and appends the seconds to a file.
TIMER = r'''
import json, os, time, types

def register():
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader
    if getattr(BaseModelLoader, "_ringload_bench_timed", False):
        return
    original = BaseModelLoader.load_model

    def load_model(self, *args, **kwargs):
        inner = type(self).load_weights

        def timed(loader, *a, **k):
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            start = time.perf_counter()
            result = inner(loader, *a, **k)
            seconds = time.perf_counter() - start
            with open(os.environ["RINGLOAD_BENCH_TIMES"], "a") as f:
                f.write(json.dumps({"loader": type(loader).__name__, "seconds": seconds}) + "\n")
            return result

        self.load_weights = types.MethodType(timed, self)
        try:
            return original(self, *args, **kwargs)
        finally:
            del self.load_weights

    BaseModelLoader.load_model = load_model
    BaseModelLoader._ringload_bench_timed = True
'''

# One vLLM start with one loader: prints the greedy tokens as JSON.
CHILD = r'''
import json, sys
if __name__ == "__main__":
    from vllm import LLM, SamplingParams
    folder, settings = sys.argv[1], json.loads(sys.argv[2])
    llm = LLM(model=folder, enforce_eager=True, max_model_len=128, dtype="float32", seed=0, **settings)
    out = llm.generate(["The quick brown fox"], SamplingParams(temperature=0, max_tokens=8, ignore_eos=True),
                       use_tqdm=False)
    print("TOKENS " + json.dumps(list(out[0].outputs[0].token_ids)))
'''


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/ringload-vllm-bench")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--ringload", default=os.path.join(ROOT, "build", "release", "bindings", "cli", "ringload"))
    return parser.parse_args()


def make_model(args):
    folder = os.path.join(args.work, "llama-1b")
    weights = os.path.join(folder, "model.safetensors")
    if os.path.exists(weights):
        return folder
    os.makedirs(folder, exist_ok=True)
    sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
    import tiny_llama
    from transformers import LlamaConfig
    tokenizer = tiny_llama._train_tokenizer(folder)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, num_attention_heads=16, num_key_value_heads=4,
                         num_hidden_layers=18, intermediate_size=4096, max_position_embeddings=256,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=False, torch_dtype="float32")
    config.save_pretrained(folder)
    subprocess.run([args.ringload, "bench", "model", "--shape", "llama-1b", "--dtype", "float32", "--to",
                    "safetensors", weights], check=True)
    return folder


def plugin_path(args):
    """A folder to put on PYTHONPATH: the timer module and its entry point."""
    folder = os.path.join(args.work, "timer")
    info = os.path.join(folder, "ringload_bench_timer-0.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(folder, "ringload_bench_timer.py"), "w") as f:
        f.write(TIMER)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: ringload-bench-timer\nVersion: 0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[vllm.general_plugins]\nringload_bench_timer = ringload_bench_timer:register\n")
    return folder


def run_one(args, folder, name, timer, times_file):
    scratch = tempfile.mkdtemp(prefix="vllm-bench-", dir=args.work)
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", VLLM_CACHE_ROOT=os.path.join(scratch, "vllm"),
               HF_HOME=os.path.join(scratch, "hf"), XDG_CACHE_HOME=scratch, RINGLOAD_BENCH_TIMES=times_file,
               PYTHONPATH=os.pathsep.join([timer] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    before = open(times_file).read().count("\n") if os.path.exists(times_file) else 0
    done = subprocess.run([sys.executable, "-c", CHILD, folder, json.dumps(LOADERS[name])], env=env,
                          capture_output=True, text=True, timeout=900)
    tokens = [line for line in done.stdout.splitlines() if line.startswith("TOKENS ")]
    if done.returncode != 0 or not tokens:
        raise SystemExit(f"vllm_load: {name} failed:\n{done.stderr[-3000:]}")
    with open(times_file) as f:
        lines = f.read().splitlines()[before:]
    if len(lines) != 1:
        raise SystemExit(f"vllm_load: {name}: expected one timed load_weights, found {len(lines)}")
    return json.loads(lines[0])["seconds"], json.loads(tokens[0][len("TOKENS "):])


def main():
    args = parse_args()
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        raise SystemExit("vllm_load: run as root (the page cache is dropped before each load)")
    os.makedirs(args.work, exist_ok=True)
    folder = make_model(args)
    timer = plugin_path(args)
    times_file = os.path.join(args.work, "times.jsonl")
    names = args.loaders.split(",")
    seconds = {name: [] for name in names}
    reference = None
    for run in range(args.runs):
        for name in (names if run % 2 == 0 else names[::-1]):
            taken, tokens = run_one(args, folder, name, timer, times_file)
            reference = reference or tokens
            if tokens != reference:
                raise SystemExit(f"vllm_load: {name} gave tokens {tokens}, the first run {reference}")
            seconds[name].append(taken)
            print(f"{name:10} {taken:.2f} s  tokens {tokens}", flush=True)
    size = os.path.getsize(os.path.join(folder, "model.safetensors"))
    print(f"\nllama-1b float32, {size / 1e9:.2f} GB, vLLM {vllm_version()} on the CPU, cold page cache, "
          f"load_weights timed in the worker, {args.runs} runs each\n")
    print("| loader | seconds (median [min-max]) |")
    print("|---|---|")
    for name in names:
        runs = seconds[name]
        print(f"| {name} | {statistics.median(runs):.2f} [{min(runs):.2f}-{max(runs):.2f}] |")
    for name, why in NOT_RUN.items():
        print(f"| {name} | not run: {why} |")


def vllm_version():
    from importlib.metadata import version
    try:
        return version("vllm-cpu")
    except Exception:  # noqa: BLE001 - a vLLM installed under another name
        return version("vllm")


if __name__ == "__main__":
    main()
