"""SGLang's `--load-format ringload`: SGLang reads its weights through ringload.

    python -m sglang.launch_server --model-path MODEL_DIR --load-format ringload \\
        --model-loader-extra-config '{"uri": "s3://models/llama.safetensors", "s3_endpoint": "..."}'

SGLang finds register() through the `sglang.srt.plugins` entry point that `pip install
ringload` declares, and calls it in each of its processes (sglang.srt.plugins.load_plugins):
it adds "ringload" to the --load-format choices and hooks LoadConfig._verify_load_format
(SGLang's HookRegistry, an AROUND hook), which turns the name into the loader class;
get_model_loader instantiates a class given as the load format. The loader is SGLang's
DefaultModelLoader with its weights read by ringload: the model is built as SGLang builds it,
then each tensor goes straight into the parameters the model's load_weights would copy it to
(the plan learned from load_weights itself, ringload/params/plan.py; with tensor
parallelism over SGLang's TP group, read once between the ranks), and SGLang's own
post-processing runs after. On a GPU the tensors are handed to load_weights as they land
("into_parameters": true reads them straight into the device parameters: not yet checked on a
device, so not the default). The
options are the vLLM loader's (ringload/servers/weights.py: uri, verify_hash, key_file, the
network and ring options, placement, read_once), in --model-loader-extra-config.

Tested with SGLang 0.5.23 on the CPU without serving: PyPI's SGLang cannot run a model on
this machine's CPU (its CPU kernels, sgl-kernel, are not on PyPI), so the test builds the model
through get_model_loader and compares every parameter with what SGLang's DefaultModelLoader
loads (tests/bindings/sglang_test.py).
"""
from __future__ import annotations

import logging

from .weights import check_sources, find_weight_files, parse_options, stream_weights

LOAD_FORMAT = "ringload"
TESTED_SGLANG_VERSIONS = ("0.5.23",)
VERIFY_TARGET = "sglang.srt.configs.load_config.LoadConfig._verify_load_format"
_logger = logging.getLogger("ringload.sglang")
_registered = False


def register() -> None:
    """The entry point: makes "ringload" a load format of SGLang in this process (safe to call
    again). Where SGLang or its plugin interface is missing this logs why and does nothing."""
    global _registered
    if _registered:
        return
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
        from sglang.srt.server_args import LOAD_FORMAT_CHOICES, add_load_format_choices
    except ImportError as error:
        _logger.warning("ringload: SGLang's plugin interface is not importable (%s); the load format 'ringload' is "
                        "not registered (tested with SGLang %s)", error, ", ".join(TESTED_SGLANG_VERSIONS))
        return
    if LOAD_FORMAT not in LOAD_FORMAT_CHOICES:
        add_load_format_choices([LOAD_FORMAT])
    HookRegistry.register(VERIFY_TARGET, _verify_load_format, HookType.AROUND)
    _registered = True


def _verify_load_format(original, config, *args, **kwargs):
    """"ringload" becomes the loader class (get_model_loader instantiates a class given as the
    load format); any other name is SGLang's to check."""
    if isinstance(config.load_format, str) and config.load_format.lower() == LOAD_FORMAT:
        config.load_format = loader_class()
        return None
    return original(config, *args, **kwargs)


_loader = None


def loader_class():
    """The loader, made on SGLang's DefaultModelLoader (imported only when SGLang is there)."""
    global _loader
    if _loader is None:
        from sglang.srt.model_loader.loader import DefaultModelLoader
        _loader = _make_loader(DefaultModelLoader)
    return _loader


def _make_loader(base):
    import torch
    from sglang.srt.model_loader.loader import _get_quantization_config, _initialize_model
    from sglang.srt.model_loader.utils import set_default_torch_dtype

    class RingloadModelLoader(base):
        """SGLang's DefaultModelLoader, its weights read by ringload straight into the parameters."""

        def __init__(self, load_config):
            # BaseModelLoader's: DefaultModelLoader's own refuses extra config keys not its own.
            super(base, self).__init__(load_config)
            self.options = parse_options(load_config.model_loader_extra_config or None)

        def download_model(self, model_config) -> None:
            check_sources(self.sources(model_config))

        def sources(self, model_config) -> list:
            return list(self.options.uris) or find_weight_files(model_config.model_path)

        def load_model(self, *, model_config, device_config):
            target = torch.device(device_config.device)
            quant_config = _get_quantization_config(model_config, self.load_config)
            sources = self.sources(model_config)
            check_sources(sources)
            with set_default_torch_dtype(model_config.dtype):
                with target:
                    model = _initialize_model(model_config, self.load_config, quant_config)
                if self.options.reads_into_parameters(target.type):
                    self._into_parameters(model, sources, devices=target.type != "cpu")
                    base.postprocess_weights(model, target)
                else:
                    weights = stream_weights(sources, _engine_device(target), self.options.stream_kwargs)
                    base.load_weights_and_postprocess(model, weights, target)
            return model.eval()

        def _into_parameters(self, model, sources, devices: bool) -> None:
            from ..params.load import load_into_parameters, maps_files
            kwargs = self.options.stream_kwargs
            group = _tensor_parallel_group() if self.options.read_once else None
            report = load_into_parameters(sources, model.load_weights, kwargs, model=model,
                                          map_files=maps_files(kwargs.get("placement", "auto")), group=group,
                                          devices=devices)
            _logger.info("ringload: weights from %s: %s", ", ".join(sources), report.summary())
            self.report = report

    return RingloadModelLoader


def _engine_device(device) -> str:
    """SGLang's DeviceConfig says "cuda" without an index: the rank's device is the current one."""
    if device.type != "cuda":
        return device.type
    import torch
    return f"cuda:{device.index if device.index is not None else torch.cuda.current_device()}"


def _tensor_parallel_group():
    """SGLang's TP group on the CPU (gloo) where there are several ranks, else None."""
    try:
        from sglang.srt.distributed import get_tp_group
        tp = get_tp_group()
    except (ImportError, AssertionError, AttributeError):
        return None
    return tp.cpu_group if getattr(tp, "world_size", 1) > 1 else None


__all__ = ["register", "loader_class", "LOAD_FORMAT", "TESTED_SGLANG_VERSIONS"]
