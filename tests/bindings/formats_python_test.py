"""tests/bindings/formats_python_test.py: safetensors and torch zip files through ringload's Python API.

The peers are the real libraries: files that PyPI `safetensors` and Debian's torch write load
with ringload.load_file / TensorDeserializer with the values those libraries read back
themselves; torch views that share a storage share memory after the load; the torch fixtures
load as torch.load(weights_only=True) loads them; malicious pickles raise FormatError.

Run by ctest (test `formats_python`) with PYTHONPATH at <build>/bindings/python and
RINGLOAD_TEST_DATA at tests/data.
"""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")
import ringload  # noqa: E402

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
TORCH_FIXTURES = os.path.join(DATA, "torch")


def torch_manifests():
    names = sorted(f for f in os.listdir(TORCH_FIXTURES) if f.endswith(".json"))
    return [(n[:-5] + ".pt", json.load(open(os.path.join(TORCH_FIXTURES, n)))) for n in names]


def every_dtype_state():
    generator = torch.Generator().manual_seed(7)
    floats = torch.randn(37, 11, generator=generator)
    return {
        "f64": floats.double(), "f32": floats, "f16": floats.half(), "bf16": floats.bfloat16(),
        "i64": torch.randint(-2**40, 2**40, (9,), generator=generator),
        "i32": torch.randint(-2**30, 2**30, (3, 3), generator=generator, dtype=torch.int32),
        "i16": torch.randint(-2**14, 2**14, (5,), generator=generator, dtype=torch.int16),
        "i8": torch.randint(-100, 100, (4,), generator=generator, dtype=torch.int8),
        "u8": torch.randint(0, 255, (6,), generator=generator, dtype=torch.uint8),
        "bool": torch.rand(8, generator=generator) > 0.5,
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(0, 4),
        "model.layers.0.attn.weight": torch.randn(64, 64, generator=generator),
    }


def test_safetensors_files_written_by_safetensors_load_with_equal_values(tmp_path):
    state = every_dtype_state()
    path = tmp_path / "peer.safetensors"
    safetensors_torch.save_file(state, str(path), metadata={"format": "pt", "note": "from safetensors"})
    expected = safetensors_torch.load_file(str(path))
    got = ringload.load_file(str(path))
    assert sorted(got) == sorted(expected)
    for name, tensor in expected.items():
        assert got[name].dtype == tensor.dtype, name
        assert torch.equal(got[name], tensor), name


def test_safetensors_with_many_empty_tensors_between_others(tmp_path):
    # Empty tensors share their offset with the next tensor: more than 16 of them, so that
    # sorting is not the insertion sort that happens to keep file order.
    state = {f"t{i:02d}": (torch.zeros(0) if i % 3 == 0 else torch.full((i,), float(i))) for i in range(60)}
    path = tmp_path / "empties.safetensors"
    safetensors_torch.save_file(state, str(path))
    got = ringload.load_file(str(path))
    assert all(torch.equal(got[name], tensor) for name, tensor in state.items())


def test_safetensors_filter_and_dtype_through_the_deserializer(tmp_path):
    state = every_dtype_state()
    path = tmp_path / "peer.safetensors"
    safetensors_torch.save_file(state, str(path))
    with ringload.TensorDeserializer(str(path), device="cpu", dtype=torch.float16,
                                     filter_func=lambda name: name.startswith("f")) as deserializer:
        assert sorted(deserializer) == ["f16", "f32", "f64"]
        for name in deserializer:
            assert deserializer[name].dtype == torch.float16
            assert torch.equal(deserializer[name], state[name].half()), name


def test_torch_save_files_load_as_torch_loads_them(tmp_path):
    state = every_dtype_state()
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    state.update({"base": base, "rows": base[1:3], "t": base.t(), "every_other": base[:, ::2]})
    path = tmp_path / "peer.pt"
    torch.save(state, str(path))
    expected = torch.load(str(path), weights_only=True)
    got = ringload.load_file(str(path))
    assert sorted(got) == sorted(expected)
    for name, tensor in expected.items():
        assert torch.equal(got[name], tensor.contiguous()), name
    # Views of one storage share memory: 'rows' starts 6 floats into 'base'.
    assert got["rows"].data_ptr() == got["base"].data_ptr() + 6 * 4
    got["base"][1, 0] = -1.0
    assert got["rows"][0, 0] == -1.0


@pytest.mark.parametrize("name,manifest", [m for m in torch_manifests() if m[1]["expect"] == "load"],
                         ids=lambda value: value if isinstance(value, str) else "")
def test_torch_fixtures_load_as_their_manifests_say(name, manifest):
    # Through numpy: Debian's torch 1.13 has no float8 types; numpy arrays of opaque dtypes
    # carry the raw bytes.
    import hashlib
    with ringload.TensorDeserializer(os.path.join(TORCH_FIXTURES, name), device="cpu", lazy_load=True) as deserializer:
        got = {row[2]: row[3] for row in deserializer.read_numpy_arrays(allow_raw_data=True)}
    assert len(got) == len(manifest["tensors"])
    for want in manifest["tensors"]:
        array = got[".".join(want["path"])]
        assert list(array.shape) == want["shape"]
        assert hashlib.sha256(array.tobytes()).hexdigest() == want["sha256"], want["path"]


@pytest.mark.parametrize("name", [m[0] for m in torch_manifests() if m[1]["kind"] == "malicious"])
def test_malicious_pickles_are_refused_by_name(name):
    with pytest.raises(ringload.FormatError, match="forbidden global"):
        ringload.load_file(os.path.join(TORCH_FIXTURES, name))


def test_legacy_torch_files_get_a_clear_error():
    with pytest.raises(ringload.RingloadError, match="legacy torch format"):
        ringload.load_file(os.path.join(TORCH_FIXTURES, "legacy_format.pt"))


def test_save_file_writes_what_safetensors_and_torch_read(tmp_path):
    state = every_dtype_state()
    path = tmp_path / "ours.safetensors"
    ringload.save_file(state, str(path), metadata={"format": "pt", "origin": "ringload"})
    with safetensors_torch.safe_open(str(path), framework="pt") as opened:
        assert opened.metadata() == {"format": "pt", "origin": "ringload"}
    expected = safetensors_torch.load_file(str(path))
    assert sorted(expected) == sorted(state)
    for name, tensor in state.items():
        assert torch.equal(expected[name], tensor), name
    assert (path.stat().st_size - 0) > 0 and not list(tmp_path.glob("*.partial"))
    # 64-byte alignment: the data starts on a 64-byte boundary.
    aligned = tmp_path / "aligned.safetensors"
    ringload.save_file(state, str(aligned), alignment=64)
    header_length = int.from_bytes(aligned.read_bytes()[:8], "little")
    assert (8 + header_length) % 64 == 0
    assert all(torch.equal(v, state[k]) for k, v in safetensors_torch.load_file(str(aligned)).items())

    torch_path = tmp_path / "ours.pt"
    ringload.save_file(state, str(torch_path), format="torch")
    loaded = torch.load(str(torch_path), weights_only=True)
    assert sorted(loaded) == sorted(state)
    for name, tensor in state.items():
        assert torch.equal(loaded[name], tensor), name
    # And back through ringload.
    again = ringload.load_file(str(torch_path))
    assert all(torch.equal(again[name], tensor) for name, tensor in state.items())


def test_save_file_refuses_what_a_format_cannot_hold(tmp_path):
    with pytest.raises(ringload.RingloadError, match="complex128"):
        ringload.save_file({"c": torch.zeros(2, dtype=torch.complex128)}, str(tmp_path / "c.safetensors"))
    assert not (tmp_path / "c.safetensors").exists()
    with pytest.raises(ValueError, match="only tensorizer"):
        ringload.TensorSerializer(str(tmp_path / "e.pt"), format="torch",
                                  encryption=ringload.EncryptionParams.random())
    # The choices are the write option table's format row: every Python writer and `ringload
    # convert --to` refuse an unknown one with the same words.
    sentence = "option format must be one of tensorizer, safetensors, torch, not 'gguf'"
    for write in (lambda: ringload.TensorSerializer(str(tmp_path / "m.gguf"), format="gguf"),
                  lambda: ringload.save_file({"a": torch.zeros(2)}, str(tmp_path / "m.gguf"), format="gguf"),
                  lambda: ringload.convert(str(tmp_path / "none.safetensors"), str(tmp_path / "m.gguf"),
                                           format="gguf")):
        with pytest.raises(ValueError) as raised:
            write()
        assert sentence in str(raised.value)
    assert not (tmp_path / "m.gguf").exists()
    out = subprocess.run([os.environ["RINGLOAD_CLI"], "convert", str(tmp_path / "none.safetensors"),
                          str(tmp_path / "m.gguf"), "--to", "gguf"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and sentence in out.stderr, out.stderr


@pytest.mark.parametrize("format", ["torch", "safetensors"])
def test_load_into_module_from_other_formats_fills_the_modules_own_storage(tmp_path, format):
    torch.manual_seed(5)
    source = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    path = tmp_path / ("m.pt" if format == "torch" else "m.safetensors")
    if format == "torch":
        torch.save(source.state_dict(), str(path))
    else:
        safetensors_torch.save_file(source.state_dict(), str(path))
    target = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    pointers = [t.data_ptr() for t in target.state_dict().values()]
    with ringload.TensorDeserializer(str(path), device="cpu") as deserializer:
        deserializer.load_into_module(target)
    for (name, want), got in zip(source.state_dict().items(), target.state_dict().values()):
        assert torch.equal(got, want), name
    assert [t.data_ptr() for t in target.state_dict().values()] == pointers


def test_one_load_refuses_a_tensor_index_given_twice():
    from ringload import _ringload
    engine = _ringload.Deserializer(os.path.join(TORCH_FIXTURES, "shared_storage_views.pt"))
    with pytest.raises(ValueError, match="appears twice"):
        engine.load([1, 1], device="cpu", dtype=None, verify=False, destinations=None, slot_size=0, slot_count=0,
                    threads=0, progress=None)
    loaded = engine.load([1, 0], device="cpu", dtype=None, verify=False, destinations=None, slot_size=0,
                         slot_count=0, threads=0, progress=None)
    assert len(loaded) == 2


def test_convert_streams_between_formats_and_the_peers_read_the_results(tmp_path):
    state = every_dtype_state()
    source = tmp_path / "peer.pt"
    torch.save(state, str(source))
    as_safetensors = tmp_path / "model.safetensors"
    summary = ringload.convert(source, as_safetensors, memory_budget=1)  # one tensor at a time
    assert summary["format"] == "safetensors" and summary["tensors"] == len(state)
    assert summary["batches"] == sum(1 for t in state.values() if t.numel() > 0)
    assert summary["peak_held_bytes"] <= max(t.numel() * t.element_size() for t in state.values()) + (128 << 20)
    from_peer = safetensors_torch.load_file(str(as_safetensors))
    assert sorted(from_peer) == sorted(state)
    for name, tensor in state.items():
        assert torch.equal(from_peer[name], tensor), name

    key = ringload.EncryptionParams.random()
    encrypted = tmp_path / "model.tensors"
    assert ringload.convert(as_safetensors, encrypted, encryption=key)["data_version"] == 3
    back = tmp_path / "back.pt"
    ringload.convert(encrypted, back, decryption=ringload.DecryptionParams.from_key(key.key))
    got = torch.load(str(back), weights_only=True)
    for name, tensor in state.items():
        assert got[name].dtype == tensor.dtype and torch.equal(got[name], tensor), name


def test_convert_fails_clearly_and_leaves_no_target(tmp_path):
    key = ringload.EncryptionParams.random()
    encrypted = tmp_path / "model.tensors"
    ringload.save_file(every_dtype_state(), str(tmp_path / "plain.safetensors"))
    ringload.convert(tmp_path / "plain.safetensors", encrypted, encryption=key)
    with pytest.raises(ringload.DecryptionError, match="model.tensors"):
        ringload.convert(encrypted, tmp_path / "out.safetensors")
    with pytest.raises(ringload.DecryptionError):
        ringload.convert(encrypted, tmp_path / "out.safetensors",
                         decryption=ringload.DecryptionParams.from_key(ringload.EncryptionParams.random().key))
    with pytest.raises(ringload.ArgumentError, match="only tensorizer files can be encrypted"):
        ringload.convert(tmp_path / "plain.safetensors", tmp_path / "out.pt", encryption=key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tensors", "plain.safetensors"]
