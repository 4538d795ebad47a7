"""ringload.diffusers_reads: Hugging Face diffusers' from_pretrained, with ringload doing the reads.

    import ringload.diffusers_reads
    with ringload.diffusers_reads.reading() as reads:
        unet = UNet2DConditionModel.from_pretrained("/models/sd/unet")
    reads.files, reads.tensors, reads.bytes   # what ringload read

diffusers (0.42) has no hook for a weight reader: every model's weights go through
`diffusers.models.model_loading_utils.load_state_dict(file, disable_mmap, map_location)`, which
reads a .safetensors file with safetensors' load_file (mapped) and anything else with
torch.load; `modeling_utils`, `loaders.single_file_utils` and `loaders.textual_inversion` import
it by name. reading() puts ringload's load behind that name in every loaded diffusers module
for the time of the `with` (and the original back after, also when loading fails). A
.safetensors file (local or a URL ringload reads: http(s)://, s3://) is read in one engine load
onto `map_location`: placement "auto" (default) leaves a local file that is in the page cache
in its pages, mapped copy-on-write as safetensors' own load leaves it, and reads anything else
into memory of the load's own (O_DIRECT from a cold disk); "mapped" or "arena" ask for that
engine placement. Each file is one engine model-level load (ringload.dropin.model_load's
load_files: ringload/model_load.hpp's load_model, as `ringload load` and load_folder). Other
files, `disable_mmap=True`, and state dicts given as dicts go to diffusers' own function. Other
keyword arguments are the option table's Python rows (verify_hash, network options, a signature's
words, ...) and encryption=. Not for concurrent from_pretrained calls in other threads:
it patches module attributes.
"""
from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass, field

MODULE = "diffusers.models.model_loading_utils"
LOADERS_BY_NAME = ("diffusers.models.modeling_utils", "diffusers.loaders.single_file_utils",
                   "diffusers.loaders.textual_inversion")
_PLACEMENTS = ("auto", "mapped", "arena")


@dataclass
class Reads:
    """What ringload read inside one reading()."""

    files: int = 0
    tensors: int = 0
    bytes: int = 0  # what the engine loads covered
    placements: list = field(default_factory=list)  # the engine placement of each file's load
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, tensors: int, nbytes: int, placement: str) -> None:
        with self._lock:  # diffusers may load shards on a thread pool
            self.files += 1
            self.tensors += tensors
            self.bytes += nbytes
            self.placements.append(placement)


def _placement_for(path: str, device: str, asked: str, options: dict) -> str:
    """asked, or for "auto" the engine's rule (ringload/placement.hpp): the file's pages where
    they may be the tensors and the page cache holds the file."""
    if asked != "auto":
        return asked
    from ..ground.opening import auto_placement
    return auto_placement(path, device, "handed_over", options)


def _reader(original, reads: Reads, placement: str, options: dict):
    def load_state_dict(checkpoint_file, disable_mmap: bool = False, map_location="cpu"):
        if isinstance(checkpoint_file, dict) or disable_mmap or not str(checkpoint_file).endswith(".safetensors"):
            return original(checkpoint_file, disable_mmap=disable_mmap, map_location=map_location)
        from ..dropin.model_load import load_files
        path, device = str(checkpoint_file), str(map_location)
        chosen = _placement_for(path, device, placement, options)
        (loaded,) = load_files(path, device=device, placement=chosen, **options)  # the model-level call
        reads.add(len(loaded.tensors), loaded.bytes_read, chosen)
        return loaded.tensors

    return load_state_dict


@contextlib.contextmanager
def reading(placement: str = "auto", **options):
    """diffusers' weight reads go through ringload inside the `with`; yields the Reads."""
    if placement not in _PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(_PLACEMENTS)}, not {placement!r}")
    import importlib
    utils = importlib.import_module(MODULE)
    # Those that import it by name, imported now so that they are patched too (diffusers
    # imports lazily); one that cannot be imported here is not used by this from_pretrained.
    for name in LOADERS_BY_NAME:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    original = utils.load_state_dict
    reads = Reads()
    ours = _reader(original, reads, placement, options)
    # Every diffusers module that holds the original under that name (imported by name).
    patched = [module for name, module in list(sys.modules.items())
               if name.startswith("diffusers") and getattr(module, "load_state_dict", None) is original]
    for module in patched:
        module.load_state_dict = ours
    try:
        yield reads
    finally:
        for module in patched:
            module.load_state_dict = original


__all__ = ["reading", "Reads"]
