#!/usr/bin/env python3
"""bench/parameters_load.py: a vLLM-shaped stand-in loaded three ways, into parameters that
already exist on the device (issue #37's GPU benchmark; runs on the CPU too, as a smoke).

    PYTHONPATH=build/release/bindings/python python3 bench/parameters_load.py \\
        [--device cuda] [--layers 24 --hidden 2048] [--dtype bfloat16] [--runs 3] [--cache hot|cold]

The stand-in is what vLLM allocates for a Llama with one rank: fused qkv_proj and gate_up_proj,
o_proj, down_proj, norms, embedding and LM head, all made on --device first (torch.empty), and a
load_weights that narrows the fused parameters and copies each checkpoint tensor in, as vLLM's
weight loaders do. The checkpoint is one safetensors file with Hugging Face's names (q/k/v and
gate/up apart; 24 x 2048 in bfloat16 is 3.2 GB), written once into --work. Loaders, alternated,
one process per load:
  safetensors       safe_open(device="cpu") and get_tensor per name (vLLM's default loader),
                    each tensor then copied to the device by load_weights;
  safetensors_device  safetensors' load_file(device=--device), then load_weights copies device
                    to device (as the fastsafetensors/instanttensor loaders do: a transient
                    second copy of the weights on the device);
  ringload          ringload.params.load.load_into_parameters(devices=True): each tensor
                    from the pinned ring straight into its parameter.
Timed from the first read until torch.cuda.synchronize(); reported with the device memory each
held beyond the model's own (max_memory_allocated minus the parameters' bytes) and the peak
RSS. Every load's parameters are checked against the first's (a checksum). --cache cold drops
the page cache before each load (root).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from page_cache import prepare_page_cache

CHILD = r'''
import json, os, sys, time
loader, path, device, dtype_name, layers, hidden = sys.argv[1:7]
layers, hidden = int(layers), int(hidden)
import torch
dtype = getattr(torch, dtype_name)
inter, vocab, heads_kv = hidden * 4, 32000, hidden // 4

class StandIn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        def empty(*shape):
            return torch.nn.Parameter(torch.empty(*shape, dtype=dtype, device=device), requires_grad=False)
        self.params = torch.nn.ParameterDict()
        self.params["embed"] = empty(vocab, hidden)
        self.params["lm_head"] = empty(vocab, hidden)
        self.params["norm"] = empty(hidden)
        for i in range(layers):
            self.params[f"{i}_qkv"] = empty(hidden + 2 * heads_kv, hidden)
            self.params[f"{i}_o"] = empty(hidden, hidden)
            self.params[f"{i}_gate_up"] = empty(2 * inter, hidden)
            self.params[f"{i}_down"] = empty(hidden, inter)
            self.params[f"{i}_in_norm"] = empty(hidden)
            self.params[f"{i}_post_norm"] = empty(hidden)

    def load_weights(self, weights):
        p = self.params
        for name, w in weights:
            if name == "model.embed_tokens.weight": p["embed"].data.copy_(w)
            elif name == "lm_head.weight": p["lm_head"].data.copy_(w)
            elif name == "model.norm.weight": p["norm"].data.copy_(w)
            else:
                i = name.split(".")[2]
                leaf = name.split(".")[-2]
                if leaf in ("q_proj", "k_proj", "v_proj"):
                    start = {"q_proj": 0, "k_proj": hidden, "v_proj": hidden + heads_kv}[leaf]
                    p[f"{i}_qkv"].data.narrow(0, start, w.shape[0]).copy_(w)
                elif leaf in ("gate_proj", "up_proj"):
                    p[f"{i}_gate_up"].data.narrow(0, 0 if leaf == "gate_proj" else inter, inter).copy_(w)
                elif leaf == "o_proj": p[f"{i}_o"].data.copy_(w)
                elif leaf == "down_proj": p[f"{i}_down"].data.copy_(w)
                elif leaf == "input_layernorm": p[f"{i}_in_norm"].data.copy_(w)
                elif leaf == "post_attention_layernorm": p[f"{i}_post_norm"].data.copy_(w)
        return set()

model = StandIn()
model_bytes = sum(t.numel() * t.element_size() for t in model.parameters())
cuda = device.startswith("cuda")
if cuda:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
started = time.perf_counter()
if loader == "safetensors":
    from safetensors import safe_open
    with safe_open(path, framework="pt", device="cpu") as f:
        model.load_weights((name, f.get_tensor(name)) for name in f.keys())
elif loader == "safetensors_device":
    from safetensors.torch import load_file
    model.load_weights(load_file(path, device=device).items())
else:
    from ringload.params.load import load_into_parameters
    report = load_into_parameters([path], model.load_weights, {}, model=model, devices=True)
if cuda:
    torch.cuda.synchronize()
seconds = time.perf_counter() - started
checksum = sum(float(t.float().sum()) for t in model.parameters())
extra = torch.cuda.max_memory_allocated() - model_bytes if cuda else None
with open("/proc/self/status") as f:
    rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print("RESULT " + json.dumps({"seconds": seconds, "checksum": checksum, "peak_rss": rss, "extra": extra,
                              "bytes": model_bytes}))
'''

LOADERS = ("safetensors", "safetensors_device", "ringload")


def make_checkpoint(args) -> str:
    path = os.path.join(args.work, f"llama-{args.layers}x{args.hidden}-{args.dtype}.safetensors")
    if os.path.exists(path):
        return path
    import torch
    from safetensors.torch import save_file
    dtype, hidden, inter, kv = getattr(torch, args.dtype), args.hidden, args.hidden * 4, args.hidden // 4
    generator = torch.Generator().manual_seed(0)
    tensors = {"model.embed_tokens.weight": (32000, hidden), "lm_head.weight": (32000, hidden),
               "model.norm.weight": (hidden,)}
    for i in range(args.layers):
        prefix = f"model.layers.{i}."
        tensors.update({prefix + "self_attn.q_proj.weight": (hidden, hidden), prefix + "self_attn.k_proj.weight": (kv, hidden),
                        prefix + "self_attn.v_proj.weight": (kv, hidden), prefix + "self_attn.o_proj.weight": (hidden, hidden),
                        prefix + "mlp.gate_proj.weight": (inter, hidden), prefix + "mlp.up_proj.weight": (inter, hidden),
                        prefix + "mlp.down_proj.weight": (hidden, inter), prefix + "input_layernorm.weight": (hidden,),
                        prefix + "post_attention_layernorm.weight": (hidden,)})
    os.makedirs(args.work, exist_ok=True)
    values = {name: torch.randn(*shape, generator=generator).to(dtype) for name, shape in tensors.items()}
    save_file(values, path + ".partial")
    os.replace(path + ".partial", path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/ringload-parameters-bench")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", choices=("hot", "cold"), default="hot")
    parser.add_argument("--loaders", default=",".join(LOADERS))
    args = parser.parse_args()
    path = make_checkpoint(args)
    names = args.loaders.split(",")
    results = {name: [] for name in names}
    reference = None
    for run in range(args.runs):
        for name in (names if run % 2 == 0 else names[::-1]):
            prepare_page_cache(path, args.cache)
            done = subprocess.run([sys.executable, "-c", CHILD, name, path, args.device, args.dtype, str(args.layers),
                                   str(args.hidden)], capture_output=True, text=True, timeout=1800)
            lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                raise SystemExit(f"parameters_load: {name} failed:\n{done.stderr[-3000:]}")
            result = json.loads(lines[0][len("RESULT "):])
            reference = result["checksum"] if reference is None else reference
            if result["checksum"] != reference:
                raise SystemExit(f"parameters_load: {name} loaded other values ({result['checksum']} vs {reference})")
            results[name].append(result)
            extra = result["extra"]
            print(f"{name:18} {result['seconds']:.3f} s  peak RSS {result['peak_rss'] / 2**20:.0f} MiB"
                  + (f"  extra device {extra / 2**20:.0f} MiB" if extra is not None else ""), flush=True)
    size = os.path.getsize(path)
    print(f"\nvLLM-shaped stand-in, {args.layers} layers x {args.hidden}, {args.dtype}, {size / 1e9:.2f} GB, "
          f"parameters on {args.device}, {args.cache} page cache, {args.runs} runs each, one process per load\n")
    print("| loader | seconds, median [min-max] | GB/s | / safetensors | extra device MiB | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(r["seconds"] for r in results[names[0]])
    for name in names:
        times = [r["seconds"] for r in results[name]]
        median = statistics.median(times)
        extras = [r["extra"] for r in results[name] if r["extra"] is not None]
        print(f"| {name} | {median:.3f} [{min(times):.3f}-{max(times):.3f}] | {size / median / 1e9:.2f} | "
              f"{median / base:.2f} | {max(extras) / 2**20 if extras else 0:.0f} | "
              f"{statistics.median(r['peak_rss'] for r in results[name]) / 2**20:.0f} |")


if __name__ == "__main__":
    main()
