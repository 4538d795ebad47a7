"""ringload.load_folder: a whole model through the engine's model-level call
(ringload/model_load.hpp's load_model), as `ringload load DIR` loads it:

    tensors = ringload.load_folder("/models/llama")                      # {name: tensor}
    tensors = ringload.load_folder("/models/llama", signature="/models/llama.sig", public_key="pub.pem")

The weight files are the ones vLLM would read (find_weight_files: *.safetensors and their
index, *.tensors, *.bin and their index, *.pt), read side by side; with signature= every file is
verified in its own read and the folder's other files are hashed after; the first failure is
raised, naming its file. Keyword arguments are the option table's Python rows (device, dtype,
verify_hash, threads, placement, the network and signature words, ...), checked with its words.
"""
from __future__ import annotations

import os
from typing import Dict

from .. import _ringload
from ..ground.tensors import dtype_name


def load_folder(model, **options) -> Dict[str, object]:
    """Every tensor of `model` (a folder, or one file) by name, over all its weight files; a
    name in two files raises ValueError naming both."""
    if options.get("device") is not None:
        options["device"] = _ringload.device_text(options["device"])
    if options.get("dtype") is not None:
        options["dtype"] = dtype_name(options["dtype"])
    tensors, found_in = {}, {}
    for path, loaded in _ringload.load_model(os.fspath(model), **options):
        for k in range(len(loaded)):
            name = loaded.name(k)
            if name in tensors:
                raise ValueError(f"ringload: tensor {name!r} is in {found_in[name]} and in {path}")
            tensors[name], found_in[name] = loaded.array(k), path
    return tensors
