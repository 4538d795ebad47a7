"""vLLM's pre-sharded layout (its `sharded_state` load format): each tensor-parallel rank's
parameters as vLLM holds them after load_weights (q/k/v and gate/up fused, this rank's rows and
columns only), in files of its own, `model-rank-{rank}-part-{part}.safetensors`, named by the
model's state_dict keys. A rank reads only its own files, and each tensor is a whole parameter
as stored: every one can be backed by the file's pages (params/mapping.py).

    files = rank_files("/models/llama-tp2", rank=1, world_size=2)   # None: not this layout
    load_weights = state_dict_loader(state)     # ShardedStateLoader.load_weights' copies
    write_rank(state, "/models/llama-tp2", rank=1)                  # what vllm_convert --sharded writes

Kept apart from vllm_loader.py so that it can be tested without vLLM; `state` is the model's
state_dict without the tensors that share memory with another (vLLM's
ShardedStateLoader._filter_subtensors, which the loader passes in).
"""
from __future__ import annotations

import glob
import os
import re
from typing import Callable, Dict, List, Optional

PATTERN = "model-rank-{rank}-part-{part}.safetensors"
FILE_NAME = re.compile(r"model-rank-(\d+)-part-(\d+)\.safetensors$")


def rank_files(folder: str, rank: int, world_size: int) -> Optional[List[str]]:
    """This rank's files where `folder` holds the pre-sharded layout (None where it does not);
    a folder written for another number of ranks is an error, not a partial model."""
    if not os.path.isdir(folder):
        return None
    found: Dict[int, List[str]] = {}
    for path in glob.glob(os.path.join(folder, "model-rank-*-part-*.safetensors")):
        match = FILE_NAME.search(os.path.basename(path))
        if match:
            found.setdefault(int(match.group(1)), []).append(path)
    if not found:
        return None
    if sorted(found) != list(range(world_size)):
        raise ValueError(f"ringload: {folder} holds vLLM's pre-sharded layout for ranks "
                         f"{', '.join(map(str, sorted(found)))}, and this server has {world_size} "
                         f"tensor-parallel rank(s) (0-{world_size - 1}): write it again for this size "
                         "(python -m ringload.vllm_convert --sharded)")
    return sorted(found[rank], key=lambda path: int(FILE_NAME.search(path).group(2)))


def state_dict_loader(state: Dict[str, object]) -> Callable:
    """A load_weights for the pre-sharded layout, doing what vLLM's ShardedStateLoader does:
    each tensor is copied into its parameter (into its leading part where the parameter is
    larger, as LoRA pads). Returns the keys loaded; an unknown key is an error."""

    def load_weights(weights):
        loaded = set()
        for key, tensor in weights:
            if key not in state:
                raise ValueError(f"ringload: the pre-sharded checkpoint holds {key}, which this model does not have")
            data = state[key].data
            for dim, size in enumerate(tensor.shape):
                if size < data.shape[dim]:
                    data = data.narrow(dim, 0, size)
            data.copy_(tensor)
            loaded.add(key)
        return loaded

    return load_weights


def check_complete(state: Dict[str, object], loaded, files: List[str]) -> None:
    """Every parameter of this rank came from its files (as ShardedStateLoader checks)."""
    missing = sorted(set(state) - set(loaded))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(f"ringload: {', '.join(files)} lack(s) {shown}")


def write_rank(state: Dict[str, object], folder: str, rank: int) -> str:
    """This rank's parameters into folder/model-rank-{rank}-part-0.safetensors (ringload's
    writer: a temporary name renamed once whole); returns the path."""
    from ..dropin.files import save_file
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, PATTERN.format(rank=rank, part=0))
    save_file({key: tensor.detach().cpu().contiguous() for key, tensor in state.items()}, path)
    return path
