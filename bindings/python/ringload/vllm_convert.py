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
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List

from ._crypto import EncryptionParams
from ._vllm_weights import find_weight_files
from .errors import RingloadError

FORMATS = ("tensorizer", "safetensors")


def _parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ringload.vllm_convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a Hugging Face model folder (or one weights file)")
    parser.add_argument("out", help="the file to write (a local path; tensorizer also s3:// or redis://)")
    parser.add_argument("--to", choices=FORMATS, help="the format (default: from OUT's extension)")
    secret = parser.add_mutually_exclusive_group()
    secret.add_argument("--encrypt-key-file", metavar="F", help="encrypt with the raw 32-byte key in this file (tensorizer)")
    secret.add_argument("--encrypt-passphrase-file", metavar="F", help="encrypt with the passphrase in this file (tensorizer)")
    parser.add_argument("--memory-budget", type=int, default=1 << 30, metavar="BYTES",
                        help="tensor bytes held at once when converting one file (default 1 GiB)")
    return parser.parse_args(argv)


def _encryption(args) -> "EncryptionParams | None":
    """EncryptionParams from the key or passphrase file (one trailing newline ignored)."""
    path = args.encrypt_key_file or args.encrypt_passphrase_file
    if path is None:
        return None
    with open(path, "rb") as file:
        secret = file.read()
    if args.encrypt_key_file:
        if len(secret) != 32:
            raise ValueError(f"the key file {path} holds {len(secret)} bytes, not the 32 of a raw key")
        return EncryptionParams(secret)
    return EncryptionParams.from_string(secret[:-1] if secret.endswith(b"\n") else secret)


def _sources(model: str) -> List[str]:
    return [model] if os.path.isfile(model) else find_weight_files(model)


def _gather(sources: List[str]) -> dict:
    """Every shard's tensors in one flat dict (host memory); a name in two shards is refused,
    since the file could keep only one of them."""
    from ._files import load_file
    tensors: dict = {}
    for source in sources:
        for name, tensor in load_file(source).items():
            if name in tensors:
                raise ValueError(f"the tensor {name} is in two shards (the second is {source})")
            tensors[name] = tensor
    return tensors


def convert_model(model: str, out: str, to: "str | None" = None, encryption=None,
                  memory_budget: int = 1 << 30) -> dict:
    """Writes `model`'s weights as one file `out`; returns what was written (format, tensors,
    sources, seconds)."""
    from ._files import convert
    from ._serializer import TensorSerializer
    to = to or ("safetensors" if out.endswith(".safetensors") else "tensorizer")
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


def main(argv: "List[str] | None" = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    try:
        done = convert_model(args.model, args.out, args.to, _encryption(args), args.memory_budget)
    except (OSError, ValueError, RingloadError) as error:
        print(f"ringload.vllm_convert: {error}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {done['format']}, {done['tensors']} tensors from {len(done['sources'])} file(s) "
          f"in {done['seconds']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
