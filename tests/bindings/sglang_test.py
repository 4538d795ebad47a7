"""tests/bindings/sglang_test.py: SGLang's `--load-format ringload` (ringload.sglang_loader)
against SGLang's own DefaultModelLoader, with the real SGLang 0.5.23 from PyPI, on the CPU.

This file checks SGLang's own loading in this process (sglang_generate_test.py runs SGLang's
engine and compares the tokens it generates): the plugin is found through the
`sglang.srt.plugins` entry point (load_plugins), LoadConfig(load_format="ringload") passes
SGLang's check, get_model_loader returns ringload's loader, and its load_model builds the model
with SGLang's classes (one gloo rank, SGLang's model-parallel groups), reads the weights and
runs SGLang's post-processing. Checked against the same model loaded by SGLang's
DefaultModelLoader ("auto"): every parameter equal; every tensor went straight into the
parameters (fused q/k/v and gate/up included), none handed over; all copied in (placement
"arena") or the whole-tensor and gate/up ones mapped from the file (placement "mapped"); no
byte of the file read twice; a missing file named. Run with .venv-sglang's python (scripts/setup_sglang.sh).
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("SGLANG_PLUGINS", "ringload")  # only ours, whatever else is installed


def _free_port() -> int:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def sglang_ready(tmp_path_factory):
    """One gloo rank with SGLang's model-parallel groups and its process-wide server arguments,
    as SGLang's own layer tests set them up (test/layer_ut_utils.py); the tiny Llama folder."""
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    from sglang.srt.distributed import parallel_state
    from sglang.srt.distributed.parallel_state import init_distributed_environment, initialize_model_parallel
    from sglang.srt.runtime_context import SpawnRanks, get_parallel, publish, reset_context
    from sglang.srt.server_args import ServerArgs
    from tiny_llama import make_tiny_llama

    folder = str(tmp_path_factory.mktemp("sglang") / "tiny-llama")
    make_tiny_llama(folder)
    init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo")
    reset_context()
    publish(ServerArgs(model_path=folder, device="cpu", dtype="float32", tp_size=1, pp_size=1), role="test",
            ranks=SpawnRanks(world_rank=0))
    get_parallel().override_permanently(world_group=parallel_state._WORLD)
    initialize_model_parallel(backend="gloo")
    return folder


def load(folder, load_format, extra=None):
    from sglang.srt.configs.device_config import DeviceConfig
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.loader import get_model_loader
    model_config = ModelConfig(model_path=folder, dtype="float32")
    loader = get_model_loader(LoadConfig(load_format=load_format, model_loader_extra_config=extra or {}), model_config)
    return loader, loader.load_model(model_config=model_config, device_config=DeviceConfig(device="cpu"))


def test_the_plugin_is_registered_through_the_entry_point(sglang_ready):
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import LOAD_FORMAT_CHOICES
    load_plugins()
    assert "ringload" in LOAD_FORMAT_CHOICES
    import ringload.sglang_loader
    assert LoadConfig(load_format="ringload").load_format is ringload.sglang_loader.loader_class()
    with pytest.raises(ValueError):  # SGLang's own check still refuses what it does not know
        LoadConfig(load_format="no-such-format")


@pytest.mark.parametrize("placement", ["arena", "mapped"])
def test_ringload_loads_what_sglangs_default_loader_loads(sglang_ready, placement):
    import torch
    from sglang.srt.plugins import load_plugins
    load_plugins()
    folder = sglang_ready
    _, reference = load(folder, "auto")
    loader, model = load(folder, "ringload", {"placement": placement})
    assert type(loader).__name__ == "RingloadModelLoader"
    expected = dict(reference.named_parameters())
    got = dict(model.named_parameters())
    assert set(got) == set(expected)
    assert any("qkv_proj" in name for name in got) and any("gate_up_proj" in name for name in got)
    for name, tensor in got.items():
        assert torch.equal(tensor, expected[name]), name
    report = loader.report
    assert not report.handed, report.handed  # SGLang's Llama loaders only narrow and copy
    size = os.path.getsize(os.path.join(folder, "model.safetensors"))
    assert report.straight_bytes + report.mapped_bytes <= report.bytes_read <= size
    if placement == "mapped":  # whole tensors as stored (and gate_up, stored back to back) map
        assert report.mapped_parameters > 0 and report.mapped_bytes > 0, report.summary()
    else:
        assert report.mapped_parameters == 0 and report.straight_tensors > 0, report.summary()


def test_a_missing_weights_file_is_named(sglang_ready, tmp_path):
    from sglang.srt.plugins import load_plugins
    load_plugins()
    missing = str(tmp_path / "missing.safetensors")
    with pytest.raises(FileNotFoundError, match="missing.safetensors"):
        load(sglang_ready, "ringload", {"uri": missing})
