"""Skips, each with its reason, the upstream tests that cannot run here (the test files stay
as upstream wrote them): tests for dtypes or calls this torch lacks (upstream lets the dtype
tests return early: they would pass without testing anything), and safetensors' low-level
byte API."""
import pytest
import torch

# test name -> the torch attribute it needs (upstream's early `return` when it is missing).
_NEEDS_TORCH = {
    "test_odd_dtype_fp8_e4m3fn": "float8_e4m3fn",
    "test_odd_dtype_fp8_e5m2": "float8_e5m2",
    "test_odd_dtype_fp8_e8m0": "float8_e8m0fnu",
    "test_odd_dtype_fp8_fnuz": "float8_e4m3fnuz",
    "test_odd_dtype_fp4": "float4_e2m1fn_x2",
    # GPU tests that use torch 2.0's default device (torch.set_default_device, `with torch.device`).
    "test_gpu_default_device": "set_default_device",
    "test_deserialization_device": "set_default_device",
}
_NOT_RINGLOAD = {
    "test_exception": "safetensors' low-level byte API (TensorSpec, serialize) has no ringload counterpart",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        attribute = _NEEDS_TORCH.get(item.name)
        if attribute is not None and not hasattr(torch, attribute):
            item.add_marker(pytest.mark.skip(reason=f"torch {torch.__version__} has no torch.{attribute}"))
        if item.name in _NOT_RINGLOAD:
            item.add_marker(pytest.mark.skip(reason=_NOT_RINGLOAD[item.name]))


def pytest_configure(config):
    # The run is only worth something if `safetensors` is the shim (ringload), not the real package.
    import ringload
    import safetensors
    import safetensors.torch
    assert safetensors.safe_open is ringload.safe_open, f"safetensors is {safetensors.__file__}, not the shim"
    assert safetensors.torch.save_file is ringload.save_file
