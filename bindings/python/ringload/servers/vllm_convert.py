"""Turns a Hugging Face model folder's weights into one file for `--load-format ringload`.

    python -m ringload.vllm_convert MODEL_DIR OUT [--to tensorizer|safetensors]
        [--encrypt-key-file F | --encrypt-passphrase-file F] [--memory-budget BYTES]

MODEL_DIR's weights (every shard: safetensors, with or without its index json, or torch
pytorch_model*.bin / *.pt; a single file may be given instead of a folder) become ONE
tensorizer file (optionally encrypted: a raw 32-byte key, or a passphrase whose key is derived
with Argon2id and a fresh salt) or safetensors file, with the checkpoint's names unchanged so
that vLLM's load_weights maps them as it maps the originals. --to defaults to OUT's extension
(.safetensors, else tensorizer). Neither vLLM nor torch modules are involved: ringload's
readers and writers only. One source file is converted streamed (about --memory-budget held);
several shards are gathered in memory and written in one pass (the engine converts one source
at a time), so that needs the model's size in memory.

    vllm serve MODEL_DIR --load-format ringload --model-loader-extra-config '{"uri": "OUT"}'

    python -m ringload.vllm_convert MODEL_DIR OUT_DIR --sharded N [--dtype float16]

--sharded N writes vLLM's pre-sharded layout for N tensor-parallel ranks instead: each rank's
parameters as vLLM holds them after load_weights (q/k/v and gate/up fused, this rank's rows and
columns), one `model-rank-R-part-0.safetensors` per rank, beside MODEL_DIR's config and
tokenizer. This starts vLLM on MODEL_DIR (its own classes decide the layout: ringload's load
format with the option save_sharded_state), so vLLM must be installed and able to run the
model here; set what it needs as for a server (VLLM_CPU_KVCACHE_SPACE, VLLM_CPU_OMP_THREADS_BIND).
Each rank of a server started on OUT_DIR with `--load-format ringload` reads only its own file,
and every parameter is backed by the file's pages where the load maps (docs/benchmarks.md);
vLLM's own `--load-format sharded_state` reads it too.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List

from .. import _ringload
from ..ground.crypto import EncryptionParams
from .weights import find_weight_files
from ..errors import RingloadError

FORMATS = ("tensorizer", "safetensors")


def _parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ringload.vllm_convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a Hugging Face model folder (or one weights file)")
    parser.add_argument("out", help="the file to write (a local path; tensorizer also s3:// or redis://)")
    # The write's rows of the option table, as `ringload convert` takes them (same flags, help
    # and words; the formats are those vLLM's loader reads).
    rows = {row["name"]: row for row in _ringload.write_option_table()}
    for name in ("format", "encrypt_key_file", "encrypt_passphrase_file", "memory_budget"):
        row = rows[name]
        parser.add_argument(row["cli_flag"], dest=name, choices=FORMATS if name == "format" else None,
                            metavar={"format": None, "memory_budget": "BYTES"}.get(name, "F"),
                            help=row["help"] + (f" (default {row['default']})" if row["default"] else ""))
    parser.add_argument("--sharded", type=int, metavar="N",
                        help="write vLLM's pre-sharded layout for N tensor-parallel ranks into the folder OUT "
                             "(runs vLLM on MODEL_DIR)")
    parser.add_argument("--dtype", default="auto", help="with --sharded: the dtype vLLM holds the parameters in")
    args = parser.parse_args(argv)
    try:
        args.memory_budget = _ringload.check_write_option("memory_budget", args.memory_budget or "0", "cli") or \
            int(rows["memory_budget"]["default"])
    except ValueError as error:
        parser.error(f"{rows['memory_budget']['cli_flag']}: {error}")
    if args.encrypt_key_file and args.encrypt_passphrase_file:
        parser.error("give encrypt_key_file or encrypt_passphrase_file, not both")
    args.to = args.format
    if args.sharded is not None and (args.sharded < 1 or args.to or args.encrypt_key_file
                                     or args.encrypt_passphrase_file):
        parser.error("--sharded takes a positive rank count and writes safetensors, unencrypted")
    return args


def _encryption(args) -> "EncryptionParams | None":
    """EncryptionParams from the key or passphrase file, read by the engine's rule (as the CLI's
    --encrypt-key-file and --encrypt-passphrase-file: ringload/crypto_params.hpp)."""
    if args.encrypt_key_file:
        return EncryptionParams.from_key_file(args.encrypt_key_file)
    if args.encrypt_passphrase_file:
        return EncryptionParams.from_passphrase_file(args.encrypt_passphrase_file)
    return None


def _sources(model: str) -> List[str]:
    return [model] if os.path.isfile(model) else find_weight_files(model)


def _gather(sources: List[str]) -> dict:
    """Every shard's tensors in one flat dict (host memory), read side by side by the engine's
    model-level call (ringload.load_folder); a name in two shards is refused, since the file
    could keep only one of them."""
    from ..dropin.model_load import load_folder
    return load_folder(list(sources))


def convert_model(model: str, out: str, to: "str | None" = None, encryption=None,
                  memory_budget: int = 1 << 30) -> dict:
    """Writes `model`'s weights as one file `out`; returns what was written (format, tensors,
    sources, seconds)."""
    from ..dropin.files import convert
    from ..dropin.serializer import TensorSerializer
    from .. import _ringload
    to = to or _ringload.format_for_target(out)
    sources = _sources(model)
    started = time.perf_counter()
    if len(sources) == 1:
        done = convert(sources[0], out, format=to, encryption=encryption, memory_budget=memory_budget)
        count = done["tensors"]
    else:
        tensors = _gather(sources)
        with TensorSerializer(out, format=to, encryption=encryption) as serializer:
            serializer.write_state_dict(tensors)
        count = len(tensors)
    return {"format": to, "tensors": count, "sources": sources, "seconds": time.perf_counter() - started}


def _copy_model_files(model: str, out: str) -> None:
    """MODEL_DIR's config, tokenizer and other small files (not its weights) into OUT."""
    import shutil
    from ..ground.opening import weight_extensions
    weights = weight_extensions()
    for name in os.listdir(model):
        path = os.path.join(model, name)
        if os.path.isfile(path) and not name.endswith(weights) and not name.endswith(".index.json"):
            shutil.copy2(path, os.path.join(out, name))


def convert_sharded(model: str, out: str, ranks: int, dtype: str = "auto") -> dict:
    """vLLM's pre-sharded layout of `model` for `ranks` tensor-parallel ranks in the folder
    `out` (vLLM started on `model` with ringload's load format writes each rank's parameters
    after load_weights, before vLLM repacks them); returns what was written."""
    if not os.path.isdir(model):
        raise ValueError(f"--sharded needs a model folder (config.json beside the weights), not {model}")
    os.makedirs(out, exist_ok=True)
    if any(name.startswith("model-rank-") for name in os.listdir(out)):
        raise ValueError(f"{out} already holds a pre-sharded layout; give an empty folder")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # the KV cache is never used: small
    from vllm import LLM
    started = time.perf_counter()
    parallel = {"tensor_parallel_size": ranks, "distributed_executor_backend": "mp"} if ranks > 1 else {}
    llm = LLM(model=model, load_format="ringload", enforce_eager=True, max_model_len=128, dtype=dtype,
              model_loader_extra_config={"save_sharded_state": out}, **parallel)
    del llm
    _copy_model_files(model, out)
    files = sorted(name for name in os.listdir(out) if name.startswith("model-rank-"))
    if len(files) != ranks:
        raise ValueError(f"vLLM wrote {len(files)} rank file(s) into {out}, not {ranks}")
    return {"format": "vLLM's pre-sharded safetensors", "tensors": ranks, "sources": find_weight_files(model),
            "seconds": time.perf_counter() - started}


def main(argv: "List[str] | None" = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.sharded is not None:
            done = convert_sharded(args.model, args.out, args.sharded, args.dtype)
        else:
            done = convert_model(args.model, args.out, args.to, _encryption(args), args.memory_budget)
    except (OSError, ValueError, RingloadError) as error:
        print(f"ringload.vllm_convert: {error}", file=sys.stderr)
        return 1
    what = "rank files" if args.sharded is not None else "tensors"
    print(f"wrote {args.out}: {done['format']}, {done['tensors']} {what} from {len(done['sources'])} file(s) "
          f"in {done['seconds']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
