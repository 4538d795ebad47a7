"""tests/bindings/slices_test.py: sliced reads (Deserializer.load_slices, ringload.ground.slices, read_slices).

Every slice is checked against torch's own slicing of the whole tensor as an independent reader
loads it: PyPI safetensors for safetensors files, the real tensorizer for tensorizer files,
torch.load for torch zip files (views with strides and storage offsets included). Every dtype
these writers take, ranks 0..4, zero-size dimensions, non-divisible sizes, first and last rows,
column slices. Sources: the disk, HTTP/1.1 and h2c from a real nginx (whose access log counts
the range requests), S3 (moto) and redis:// (redis-server), started by tests/support's helpers.
Bytes read stay within the slice's bytes (plus one slot per tensor), and many slices in one call
are one plan: adjacent or dense runs become one range request. A server that is missing or does
not start is an error, not a skip (scripts/setup.sh installs them).

Run by ctest (test `slices_python`) with PYTHONPATH at <build>/bindings/python and
RINGLOAD_TEST_DATA at tests/data.
"""
import hashlib
import json
import math
import os
import pathlib
import random
import shutil
import sys
import tempfile

import numpy
import pytest
import safetensors.torch as safetensors_torch
import tensorizer
import tensorizer.serialization
import torch

import ringload
from ringload import _ringload
from ringload.ground.file_reads import Entry
from ringload.ground.slices import load_slices
from ringload.ground.tensors import ITEMSIZE

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import nginx  # noqa: E402
import redis_server  # noqa: E402
import s3_server  # noqa: E402

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
SHAPES = [(), (7,), (0,), (5, 3), (4, 0), (13, 6), (3, 5, 2), (2, 0, 3), (2, 3, 1, 4), (3, 2, 5, 3)]
TORCH_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                "complex64", "complex128"]


def make_tensor(dtype, shape, generator):
    t = getattr(torch, dtype)
    if dtype == "bool":
        return torch.rand(shape, generator=generator) > 0.5
    if dtype.startswith("complex"):
        return torch.randn(shape, generator=generator, dtype=t)
    if dtype.startswith(("float", "bfloat")):
        return torch.randn(shape, generator=generator).to(t)
    low, high = (0, 255) if dtype == "uint8" else (-100, 100)
    return torch.randint(low, high, shape, generator=generator).to(t)


def state_of(dtypes, seed=5):
    generator = torch.Generator().manual_seed(seed)
    return {f"{dtype}.{k}": make_tensor(dtype, shape, generator) for dtype in dtypes for k, shape in enumerate(SHAPES)}


def slices_for(shape, rng):
    """Ranges per dimension: whole, first and last rows, a middle block, column slices, empty, random."""
    if not shape:
        return [[]]
    cases = [[(0, n) for n in shape]]
    n0 = shape[0]
    cases.append([(0, min(1, n0))] + [(0, n) for n in shape[1:]])                 # first row
    cases.append([(max(0, n0 - 1), n0)] + [(0, n) for n in shape[1:]])            # last row
    cases.append([(n0 // 3, n0 - n0 // 4)] + [(0, n) for n in shape[1:]])         # middle, non-divisible
    cases.append([(n0 // 2, n0 // 2)] + [(0, n) for n in shape[1:]])              # zero-size
    if len(shape) >= 2:
        cases.append([(0, n0), (shape[1] // 3, shape[1] - shape[1] // 3)] + [(0, n) for n in shape[2:]])  # columns
        cases.append([(0, n) for n in shape[:-1]] + [(1 % max(shape[-1], 1), shape[-1])])  # last dim only
    for _ in range(3):
        ranges = []
        for n in shape:
            a, b = rng.randint(0, n), rng.randint(0, n)
            ranges.append((min(a, b), max(a, b)))
        cases.append(ranges)
    return [[(min(a, n), min(b, n)) for (a, b), n in zip(case, shape)] for case in cases]


def cut(tensor, ranges):
    return tensor[tuple(slice(a, b) for a, b in ranges)] if ranges else tensor


def entries_of(engine):
    return {e.name: e for e in (Entry(row) for row in engine.tensors())}


def check_all(engine, expected, rng, verify=False, dtype=None):
    """Every slice of every tensor, in ONE call; returns its bytes read."""
    entries = entries_of(engine)
    requests, wanted = [], []
    for name, tensor in expected.items():
        for ranges in slices_for(tuple(tensor.shape), rng):
            requests.append((entries[name], ranges))
            want = cut(tensor, ranges)
            wanted.append((name, ranges, want.to(getattr(torch, dtype)) if dtype and want.is_floating_point()
                           else want))
    got, bytes_read = load_slices(engine, None, requests, "cpu", verify, dtype)
    assert len(got) == len(wanted)
    for tensor, (name, ranges, want) in zip(got, wanted):
        assert tensor.dtype == want.dtype, (name, ranges)
        assert tuple(tensor.shape) == tuple(want.shape), (name, ranges)
        assert torch.equal(tensor, want), (name, ranges)
    return bytes_read


def write_safetensors(state, path):
    """The dtypes PyPI safetensors writes; the state it read back."""
    kept = {}
    for name, tensor in state.items():
        try:
            safetensors_torch.save_file({"x": tensor}, str(path) + ".probe")
            kept[name] = tensor
        except (ValueError, TypeError, KeyError, RuntimeError):
            pass
    safetensors_torch.save_file(kept, str(path))
    return safetensors_torch.load_file(str(path))


def write_tensorizer(state, path):
    kept = {}
    for name, tensor in state.items():
        try:
            probe = tensorizer.TensorSerializer(str(path) + ".probe")
            probe.write_state_dict({"x": tensor})
            probe.close()
            with tensorizer.TensorDeserializer(str(path) + ".probe", device="cpu") as back:
                back["x"].clone()
            kept[name] = tensor
        except Exception:  # noqa: BLE001 - what tensorizer does not write or read back is left out
            pass
    serializer = tensorizer.TensorSerializer(str(path))
    serializer.write_state_dict(kept)
    serializer.close()
    with tensorizer.TensorDeserializer(str(path), device="cpu") as loaded:
        return {name: loaded[name].clone() for name in kept}


def test_safetensors_slices_of_every_dtype_and_rank(tmp_path):
    path = tmp_path / "every.safetensors"
    expected = write_safetensors(state_of(TORCH_DTYPES), path)
    assert {"bfloat16.9", "bool.0", "uint8.6"} <= set(expected)
    check_all(_ringload.Deserializer(str(path)), expected, random.Random(1))


def test_tensorizer_slices_of_every_dtype_and_rank(tmp_path):
    path = tmp_path / "every.tensors"
    expected = write_tensorizer(state_of(TORCH_DTYPES), path)
    assert {"float32.9", "int64.8"} <= set(expected)
    engine = _ringload.Deserializer(str(path))
    check_all(engine, expected, random.Random(2))
    # Stored hashes cover whole tensors: verify reads them whole and cuts the slices out.
    check_all(engine, expected, random.Random(3), verify=True)


def test_torch_zip_slices_of_every_dtype_rank_and_view(tmp_path):
    state = state_of(TORCH_DTYPES)
    base = torch.arange(6 * 8, dtype=torch.float32).reshape(6, 8)
    state.update({
        "view.base": base, "view.t": base.t(), "view.block": base[2:5, 1:7], "view.row": base[1],
        "view.expanded": torch.arange(5, dtype=torch.int32).expand(4, 5),
        "view.permuted": torch.arange(2 * 3 * 4, dtype=torch.int16).reshape(2, 3, 4).permute(2, 0, 1),
        "view.stepped": torch.arange(20, dtype=torch.float64)[::3],
    })
    path = tmp_path / "every.pt"
    torch.save(state, str(path))
    expected = torch.load(str(path))
    check_all(_ringload.Deserializer(str(path)), expected, random.Random(4))


def test_numpy_only_dtypes_and_float8_as_bytes(tmp_path):
    from safetensors.numpy import load_file, save_file
    rng = numpy.random.default_rng(8)
    arrays = {f"{d}.{k}": rng.integers(0, 2**15, size=shape).astype(d)
              for d in ("uint16", "uint32", "uint64") for k, shape in enumerate([(), (9,), (5, 7), (3, 0, 2), (2, 3, 4, 5)])}
    path = tmp_path / "unsigned.safetensors"
    save_file(arrays, str(path))
    expected = load_file(str(path))
    # float8: written by hand (numpy has no float8); the expectation is numpy's slicing of the bytes.
    f8 = rng.integers(0, 256, size=(6, 10), dtype=numpy.uint8)
    header = json.dumps({"f8": {"dtype": "F8_E4M3", "shape": [6, 10], "data_offsets": [0, 60]}}).encode()
    f8_path = tmp_path / "f8.safetensors"
    f8_path.write_bytes(len(header).to_bytes(8, "little") + header + f8.tobytes())
    for file, arrays_expected in ((path, expected), (f8_path, {"f8": f8})):
        engine = _ringload.Deserializer(str(file))
        entries = entries_of(engine)
        requests, wants = [], []
        for name, array in arrays_expected.items():
            for ranges in slices_for(array.shape, random.Random(9)):
                requests.append((entries[name].index, ranges))
                wants.append(numpy.ascontiguousarray(array[tuple(slice(a, b) for a, b in ranges)]))
        loaded = engine.load_slices(requests)
        for k, want in enumerate(wants):
            assert bytes(loaded.numpy_array(k, raw=True)) == want.tobytes(), requests[k]


def test_dtype_conversion_on_slices(tmp_path):
    path = tmp_path / "conv.safetensors"
    expected = write_safetensors(state_of(["float32", "float64", "int32"]), path)
    check_all(_ringload.Deserializer(str(path)), expected, random.Random(5), dtype="float16")


def test_encrypted_tensorizer_slices_cut_from_whole_tensors():
    manifest = json.load(open(os.path.join(DATA, "tensorizer", "encrypted_key_v3.tensors.json")))
    key = bytes.fromhex(manifest["encryption"]["key_hex"])
    path = os.path.join(DATA, "tensorizer", "encrypted_key_v3.tensors")
    # The whole tensors as the real tensorizer decrypts them.
    decryption = tensorizer.serialization.DecryptionParams.from_key(key)
    with tensorizer.TensorDeserializer(path, device="cpu", encryption=decryption) as whole:
        expected = {name: whole[name].detach().clone() for name in whole.keys()}
    engine = _ringload.Deserializer(path, key=key)
    bytes_read = check_all(engine, expected, random.Random(6))
    assert bytes_read > 0


def test_meta_tensors_slice_to_zeros():
    path = os.path.join(DATA, "tensorizer", "meta_v4.tensors")
    engine = _ringload.Deserializer(path)
    entries = [e for e in entries_of(engine).values() if e.is_meta and e.shape]
    assert entries, "the fixture has meta tensors"
    got, _ = load_slices(engine, None, [(e, [(0, n) for n in e.shape]) for e in entries], "cpu", False)
    for tensor in got:
        assert not tensor.any()


def test_bad_requests_raise_with_the_tensor_and_dimension(tmp_path):
    path = tmp_path / "bad.safetensors"
    safetensors_torch.save_file({"w": torch.zeros(4, 5)}, str(path))
    engine = _ringload.Deserializer(str(path))
    with pytest.raises(Exception, match=r"tensor 'w': dimension 1 has 5 elements; the range \[2, 6\)"):
        engine.load_slices([(0, [(0, 4), (2, 6)])])
    with pytest.raises(Exception, match="one range per dimension"):
        engine.load_slices([(0, [(0, 4)])])
    with pytest.raises(Exception, match="no tensor 3"):
        engine.load_slices([(3, [(0, 1), (0, 1)])])


def test_read_slices_takes_python_indexing(tmp_path):
    path = tmp_path / "idx.safetensors"
    state = {"a": torch.randn(9, 7), "b": torch.arange(24).reshape(2, 3, 4)}
    safetensors_torch.save_file(state, str(path))
    with ringload.TensorDeserializer(str(path), device="cpu", lazy_load=True) as d:
        keys = {"a": (slice(2, -1), slice(None, 3)), "b": (Ellipsis, 1)}
        got = d.read_slices(keys)
        assert torch.equal(got["a"], state["a"][2:-1, :3])
        assert torch.equal(got["b"], state["b"][..., 1])
        assert d.total_bytes_read > 0
        with pytest.raises(ValueError, match="step 1"):
            d.read_slices({"a": (slice(0, 9, 2),)})
        with pytest.raises(IndexError):
            d.read_slices({"a": (9,)})


def quarter_rows(engine, names, slot):
    entries = entries_of(engine)
    requests = [(entries[n].index, [(0, max(1, entries[n].shape[0] // 4))] + [(0, s) for s in entries[n].shape[1:]])
                for n in names]
    loaded = engine.load_slices(requests, slot_size=slot)
    needed = sum(math.prod(b - a for a, b in r) * ITEMSIZE[entries[n].dtype] for n, (_, r) in zip(names, requests))
    return loaded, needed, requests


def big_state():
    generator = torch.Generator().manual_seed(11)
    state = {f"layer{k}.w": torch.randn(512 + 37 * k, 300 + k, generator=generator) for k in range(6)}
    state["wide"] = torch.randn(16, 20000, generator=generator)  # rows 80 KB apart: past the merge gap
    return state


def test_bytes_read_within_the_slices_plus_one_slot_per_tensor(tmp_path):
    state = big_state()
    path = tmp_path / "big.safetensors"
    safetensors_torch.save_file(state, str(path))
    slot = 64 << 10
    loaded, needed, requests = quarter_rows(_ringload.Deserializer(str(path)), list(state), slot)
    assert needed <= loaded.bytes_read <= needed + slot * len(state), (loaded.bytes_read, needed)
    for k, (name, (_, ranges)) in enumerate(zip(state, requests)):
        assert torch.equal(loaded.array(k), cut(state[name], ranges))


@pytest.fixture(scope="module")
def nginx_files():
    # Under /tmp itself: nginx's workers may run as another user, and pytest's own temporary
    # folders are private to this one.
    root = pathlib.Path(tempfile.mkdtemp(prefix="ringload-slices-http-"))
    state = big_state()
    safetensors_torch.save_file(state, str(root / "big.safetensors"))
    torch.save(state, str(root / "big.pt"))
    write_tensorizer(state, root / "big.tensors")
    os.chmod(root, 0o755)
    for name in os.listdir(root):
        os.chmod(root / name, 0o644)
    try:
        with nginx.Nginx(str(root), access_log=True) as server:  # nginx missing or not starting: an error
            yield server, state
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", ["big.safetensors", "big.pt", "big.tensors"])
@pytest.mark.parametrize("http_version", ["1.1", "2"])
def test_slices_over_http(nginx_files, name, http_version):
    server, state = nginx_files
    base = server.http_url if http_version == "1.1" else server.h2c_url
    engine = _ringload.Deserializer(f"{base}/{name}", http_version=http_version)
    check_all(engine, state, random.Random(12))
    slot = 64 << 10
    loaded, needed, _ = quarter_rows(engine, list(state), slot)
    assert needed <= loaded.bytes_read <= needed + slot * len(state), (loaded.bytes_read, needed)


def test_many_slices_in_one_call_are_one_plan(nginx_files):
    server, state = nginx_files
    engine = _ringload.Deserializer(f"{server.http_url}/big.safetensors", http_version="1.1")
    entries = entries_of(engine)
    w = entries["layer0.w"]
    row_bytes = w.shape[1] * 4

    def range_requests(requests):
        before = len(server.requests())
        loaded = engine.load_slices(requests)
        return loaded, [r for r in server.requests()[before:] if "big.safetensors" in r[0]]

    # Rows 0..9 as ten requests in one call: adjacent runs, one range request.
    loaded, ranged = range_requests([(w.index, [(k, k + 1), (0, w.shape[1])]) for k in range(10)])
    assert len(ranged) == 1, ranged
    assert loaded.bytes_read == 10 * row_bytes
    for k in range(10):
        assert torch.equal(loaded.array(k), state["layer0.w"][k:k + 1])
    # A dense column slice (gaps of 80 bytes): one range request, with the gaps read through.
    loaded, ranged = range_requests([(w.index, [(0, 64), (10, w.shape[1] - 10)])])
    assert len(ranged) == 1, ranged
    assert torch.equal(loaded.array(0), state["layer0.w"][:64, 10:-10])
    assert loaded.bytes_read == 63 * row_bytes + (w.shape[1] - 20) * 4
    # The same with merge_gap=0: one range per row, only the slice's bytes.
    before = len(server.requests())
    loaded = engine.load_slices([(w.index, [(0, 64), (10, w.shape[1] - 10)])], merge_gap=0)
    assert len([r for r in server.requests()[before:] if "big.safetensors" in r[0]]) == 64
    assert loaded.bytes_read == 64 * (w.shape[1] - 20) * 4
    assert torch.equal(loaded.array(0), state["layer0.w"][:64, 10:-10])
    # A sparse column slice (rows 80 KB apart, 8 bytes of each): one range per row, only the runs read.
    wide = entries["wide"]
    loaded, ranged = range_requests([(wide.index, [(0, 8), (3, 5)])])
    assert torch.equal(loaded.array(0), state["wide"][:8, 3:5])
    assert len(ranged) == 8, ranged
    assert loaded.bytes_read == 8 * 8
    # Every tensor's quarter in one call: one range per tensor (they lie far apart).
    loaded, ranged = range_requests([(entries[n].index, [(0, entries[n].shape[0] // 4), (0, entries[n].shape[1])])
                                     for n in state])
    assert len(ranged) == len(state), ranged


def test_slices_over_s3(tmp_path, monkeypatch):
    server = s3_server.MotoServer()  # moto missing: an error (and below, one that does not start)
    state = big_state()
    for name, write in (("big.safetensors", lambda p: safetensors_torch.save_file(state, str(p))),
                        ("big.pt", lambda p: torch.save(state, str(p)))):
        write(tmp_path / name)
    with server:
        admin = server.client()
        admin.create_bucket(Bucket="models")
        for name in ("big.safetensors", "big.pt"):
            admin.upload_file(str(tmp_path / name), "models", name)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "admin")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "admin")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        for name in ("big.safetensors", "big.pt"):
            engine = _ringload.Deserializer(f"s3://models/{name}", s3_endpoint=server.url)
            check_all(engine, state, random.Random(13))
            slot = 64 << 10
            loaded, needed, _ = quarter_rows(engine, list(state), slot)
            assert needed <= loaded.bytes_read <= needed + slot * len(state), (name, loaded.bytes_read, needed)


def test_slices_over_redis(tmp_path):
    server = redis_server.RedisServer()  # redis-server missing: an error (and below, one that does not start)
    state = big_state()
    path = tmp_path / "big.tensors"
    expected = write_tensorizer(state, path)
    with server:
        uri = server.uri + "/big"
        _ringload.Deserializer(str(path)).convert_to(uri, format="tensorizer")
        engine = _ringload.Deserializer(uri)
        check_all(engine, expected, random.Random(14))


@pytest.mark.parametrize("fixture", ["handmade_big_endian.pt", "handmade_float8_v3.pt", "handmade_torch27_layout.pt",
                                     "shared_storage_views.pt", "noncontiguous.pt", "empty_tensor.pt", "scalar_0d.pt",
                                     "many_storages.pt"])
def test_torch_fixtures_slice_as_their_whole_tensors(fixture):
    """Big-endian storages, float8, shared storages, strided views: each slice's bytes against numpy's
    slicing of the whole tensor's bytes, each whole tensor's bytes first checked against the
    fixture's manifest (sha256 of the logical little-endian values, by torch or by hand)."""
    with open(os.path.join(DATA, "torch", fixture[:-len(".pt")] + ".json")) as f:
        manifest = {".".join(str(part) for part in t["path"]): t for t in json.load(f)["tensors"]}
    engine = _ringload.Deserializer(os.path.join(DATA, "torch", fixture))
    rows = engine.tensors()
    assert sorted(".".join(str(part) for part in row["path"]) for row in rows) == sorted(manifest)
    whole = engine.load([r["index"] for r in rows])
    requests, wants = [], []
    rng = random.Random(15)
    for k, row in enumerate(rows):
        shape, size = tuple(row["shape"]), ITEMSIZE[row["dtype"]]
        name = ".".join(str(part) for part in row["path"])
        assert list(shape) == manifest[name]["shape"], name
        array = numpy.asarray(whole.numpy_array(k, raw=True)).reshape(shape + (size,))
        assert hashlib.sha256(array.tobytes()).hexdigest() == manifest[name]["sha256"], name
        for ranges in slices_for(shape, rng):
            requests.append((row["index"], ranges))
            wants.append(numpy.ascontiguousarray(array[tuple(slice(a, b) for a, b in ranges)]).tobytes())
    loaded = engine.load_slices(requests)
    # One plan: bytes that many overlapping slices need are read once, so no more than the whole load.
    assert 0 < loaded.bytes_read <= whole.bytes_read or not whole.bytes_read
    for k, want in enumerate(wants):
        assert bytes(loaded.numpy_array(k, raw=True)) == want, (fixture, requests[k])


def test_a_gpu_that_cannot_be_used_fails_as_load_does(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a usable GPU: python_cuda covers device loads")
    path = tmp_path / "gpu.safetensors"
    safetensors_torch.save_file({"w": torch.zeros(4, 5)}, str(path))
    engine = _ringload.Deserializer(str(path))
    with pytest.raises(Exception) as whole:
        engine.load([0], device="cuda:0")
    with pytest.raises(Exception) as sliced:
        engine.load_slices([(0, [(0, 2), (0, 5)])], device="cuda:0")
    assert str(sliced.value) == str(whole.value)
