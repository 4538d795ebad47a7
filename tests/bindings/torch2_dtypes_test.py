"""tests/bindings/torch2_dtypes_test.py: today's torch dtypes through the package (issue #28).

Run by the torch 2.x of .venv-vllm (PyPI, no system site packages): float8 variants, float4
(float4_e2m1fn_x2, from torch 2.8), uint16, uint32, uint64, bfloat16, complex32 and bool are
real torch dtypes there. For every one:
  - ringload's writers (save_file as safetensors, tensorizer and torch zip; TensorSerializer)
    write them and ringload's readers give back the same dtype, shape and bytes;
  - the peers agree both ways: PyPI safetensors and torch.load read our files, and we read
    theirs (safetensors.save_file, torch.save), with the same dtype and bytes;
  - the tensors of one load are views of the engine's one allocation (zero-copy: they lie
    within a span little larger than their bytes, not in allocations of their own);
  - the real tensorizer (2.11.1) reads our tensorizer file.
The values are random bytes viewed as each dtype (NaN patterns included): compared as bytes.
"""
import os

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "uint16"):
    pytest.skip(f"torch {torch.__version__} has no float8/uint16 dtypes (run by .venv-vllm's torch 2.x)",
                allow_module_level=True)
safetensors_torch = pytest.importorskip("safetensors.torch")

import ringload  # noqa: E402

DTYPES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "uint16",
          "uint32", "uint64", "bfloat16", "complex32", "bool", "int8", "float16", "float64"]
if hasattr(torch, "float4_e2m1fn_x2"):  # torch >= 2.8: two 4-bit floats a byte (safetensors' F4)
    DTYPES.append("float4_e2m1fn_x2")
NOT_IN_SAFETENSORS = {"complex32"}  # safetensors has no name for it


def state_of(names):
    generator = torch.Generator().manual_seed(28)
    state = {}
    for name in names:
        dtype = getattr(torch, name)
        width = torch.empty((), dtype=dtype).element_size()
        raw = torch.randint(0, 256, (24 * width,), dtype=torch.uint8, generator=generator)
        if name == "bool":
            raw = raw % 2
        state[name] = raw.view(dtype).reshape(4, 6)
    return state


def assert_same(got, want, where):
    assert sorted(got) == sorted(want), where
    for name, tensor in want.items():
        assert got[name].dtype == tensor.dtype, f"{where}: {name}: {got[name].dtype}"
        assert got[name].shape == tensor.shape, f"{where}: {name}"
        assert torch.equal(got[name].contiguous().view(torch.uint8), tensor.view(torch.uint8)), f"{where}: {name}"


def assert_one_allocation(tensors, where):
    spans = sorted((t.data_ptr(), t.untyped_storage().nbytes()) for t in tensors.values())
    start, end = spans[0][0], max(p + n for p, n in spans)
    total = sum(t.nbytes for t in tensors.values())
    assert end - start <= total + 64 * len(spans) + 4096, f"{where}: tensors spread over {end - start} bytes"


@pytest.mark.parametrize("form", ["safetensors", "tensorizer", "torch"])
def test_our_writers_and_readers_keep_every_dtype(tmp_path, form):
    names = [n for n in DTYPES if form != "safetensors" or n not in NOT_IN_SAFETENSORS]
    state = state_of(names)
    path = str(tmp_path / f"model.{form}")
    ringload.save_file(state, path, format=form)
    loaded = ringload.load_file(path)
    assert_same(loaded, state, f"{form}: ringload.load_file")
    assert_one_allocation(loaded, form)


def test_safetensors_refuses_complex32_by_name(tmp_path):
    with pytest.raises(Exception, match="complex32"):
        ringload.save_file(state_of(["complex32"]), str(tmp_path / "c.safetensors"))


def test_peers_read_our_files_and_we_read_theirs(tmp_path):
    state = state_of([n for n in DTYPES if n not in NOT_IN_SAFETENSORS])
    ours = str(tmp_path / "ours.safetensors")
    ringload.save_file(state, ours)
    assert_same(safetensors_torch.load_file(ours), state, "safetensors reads ours")
    theirs = str(tmp_path / "theirs.safetensors")
    safetensors_torch.save_file(state, theirs)
    assert_same(ringload.load_file(theirs), state, "we read safetensors'")

    state = state_of(DTYPES)
    ours = str(tmp_path / "ours.pt")
    ringload.save_file(state, ours, format="torch")
    assert_same(torch.load(ours, weights_only=True), state, "torch.load reads ours")
    theirs = str(tmp_path / "theirs.pt")
    torch.save(state, theirs)
    assert_same(ringload.load_file(theirs), state, "we read torch.save's")


def test_tensor_serializer_and_the_real_tensorizer(tmp_path):
    tensorizer = pytest.importorskip("tensorizer")
    state = state_of([n for n in DTYPES if n != "complex32"])
    path = str(tmp_path / "model.tensors")
    serializer = ringload.TensorSerializer(path)
    serializer.write_state_dict(state)
    serializer.close()
    with ringload.TensorDeserializer(path) as ours:
        assert_same(dict(ours), state, "ringload.TensorDeserializer")
    with tensorizer.TensorDeserializer(path) as theirs:
        assert_same(dict(theirs), state, f"tensorizer {tensorizer.__version__} reads ours")
