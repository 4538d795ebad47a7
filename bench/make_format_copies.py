#!/usr/bin/env python3
"""bench/make_format_copies.py TENSORIZER_FILE OUT_DIR: the same tensors as model.safetensors
(written by PyPI safetensors) and model.pt (written by torch.save), for the format benchmark.
Files already there are kept. The tensors are read with ringload (PYTHONPATH: the build's
bindings/python)."""
import os
import sys

import ringload
import torch

source, out = sys.argv[1:3]
targets = {"model.safetensors": None, "model.pt": None}
if all(os.path.exists(os.path.join(out, name)) for name in targets):
    sys.exit(0)
tensors = ringload.load_file(source)
safetensors_path = os.path.join(out, "model.safetensors")
if not os.path.exists(safetensors_path):
    from safetensors.torch import save_file
    save_file(tensors, safetensors_path + ".partial")
    os.replace(safetensors_path + ".partial", safetensors_path)
torch_path = os.path.join(out, "model.pt")
if not os.path.exists(torch_path):
    torch.save(tensors, torch_path + ".partial")
    os.replace(torch_path + ".partial", torch_path)
