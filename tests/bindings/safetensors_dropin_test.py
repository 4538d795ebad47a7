"""tests/bindings/safetensors_dropin_test.py: ringload's safetensors.torch API against the real
safetensors package (PyPI 0.4.5 in the .venv) and against torch's own slicing.

Files written by one load with the other; bytes equal where safetensors' output is
deterministic; safe_open's keys, metadata, tensors and slices (every dtype and rank, 0-d and
zero-size, non-divisible ranges) equal to what safetensors and torch give; the refusals with
safetensors' exception types and words; safe_open over tensorizer and torch zip files, and
over HTTP from a real nginx, from S3 (moto) and Redis (redis-server). A server that is missing
or does not start is an error, not a skip (scripts/setup.sh installs them).

Run by ctest (test `safetensors_dropin`) with PYTHONPATH at <build>/bindings/python.
"""
import json
import os
import struct
import sys

import pytest
import safetensors
import safetensors.torch as st
import torch

import ringload

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from nginx import Nginx  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from s3_server import MotoServer  # noqa: E402


def peer_state():
    """Every dtype safetensors 0.4.5 writes from torch 1.13, with 0-d and zero-size tensors."""
    generator = torch.Generator().manual_seed(11)
    floats = torch.randn(7, 13, generator=generator)
    return {
        "f64": floats.double(), "f32": floats, "f16": floats.half(), "bf16": floats.bfloat16(),
        "i64": torch.randint(-2**40, 2**40, (5, 3, 2), generator=generator),
        "i32": torch.randint(-2**30, 2**30, (3, 3), generator=generator, dtype=torch.int32),
        "i16": torch.randint(-2**14, 2**14, (5,), generator=generator, dtype=torch.int16),
        "i8": torch.randint(-100, 100, (4, 1), generator=generator, dtype=torch.int8),
        "u8": torch.randint(0, 255, (6,), generator=generator, dtype=torch.uint8),
        "bool": torch.rand(3, 5, generator=generator) > 0.5,
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(0, 4),
        "model.layers.0.attn.weight": torch.randn(33, 17, generator=generator),
    }


def header_of(data: bytes) -> dict:
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length])


# --- save / save_file / load / load_file against safetensors -----------------------------------

def test_save_gives_safetensors_bytes(tmp_path):
    state = peer_state()
    assert ringload.save(state) == st.save(state)
    assert ringload.save(state, metadata={"format": "pt"}) == st.save(state, metadata={"format": "pt"})
    ringload.save_file(state, tmp_path / "ours.safetensors", metadata={"format": "pt"})
    st.save_file(state, str(tmp_path / "theirs.safetensors"), metadata={"format": "pt"})
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "theirs.safetensors").read_bytes()


def test_files_cross_load(tmp_path):
    state = peer_state()
    ringload.save_file(state, str(tmp_path / "ours.safetensors"), metadata={"a": "1", "b": "two"})
    st.save_file(state, str(tmp_path / "theirs.safetensors"))
    by_peer = st.load_file(str(tmp_path / "ours.safetensors"))
    with safetensors.safe_open(str(tmp_path / "ours.safetensors"), framework="pt") as f:
        assert f.metadata() == {"a": "1", "b": "two"}
    for got in (by_peer, ringload.load_file(tmp_path / "theirs.safetensors"),
                ringload.load((tmp_path / "theirs.safetensors").read_bytes())):
        assert sorted(got) == sorted(state)
        for name, tensor in state.items():
            assert got[name].dtype == tensor.dtype and torch.equal(got[name], tensor), name


def test_complex64_and_dtype_order_as_recent_safetensors_writes_them():
    state = {"c": torch.complex(torch.tensor([-1.0, 2.0]), torch.tensor([1.0, 0.5])),
             "b": torch.ones(3, dtype=torch.bool),
             "f": torch.ones(2, dtype=torch.float64), "h": torch.ones(2, dtype=torch.float16)}
    data = ringload.save(state)
    header = header_of(data)
    assert header["c"]["dtype"] == "C64"
    # Data by safetensors' dtype order, widest rank first: F64 > C64 > F16 > BOOL.
    order = sorted(header, key=lambda name: header[name]["data_offsets"][0])
    assert order == ["f", "c", "h", "b"]
    back = ringload.load(data)
    assert all(torch.equal(back[name], tensor) for name, tensor in state.items())
    with pytest.raises(ringload.RingloadError, match="complex128"):
        ringload.save({"z": torch.zeros(2, dtype=torch.complex128)})


def test_load_file_takes_safetensors_keywords(tmp_path):
    path = str(tmp_path / "m.safetensors")
    st.save_file({"a": torch.arange(6.0)}, path)
    for backend in ("mmap", "pread"):
        assert torch.equal(ringload.load_file(path, device="cpu", backend=backend)["a"], torch.arange(6.0))
    assert torch.equal(ringload.load_file(path, device=torch.device("cpu"))["a"], torch.arange(6.0))
    with pytest.raises(ValueError, match="backend"):
        ringload.load_file(path, backend="bogus")


# --- refusals, as safetensors refuses ----------------------------------------------------------

def refusal(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 (the type is what is compared)
        return type(error), str(error)
    return None, None


@pytest.mark.parametrize("case", ["shared", "overlap", "non_contiguous", "sparse", "not_dict", "not_tensor"])
def test_save_refuses_as_safetensors(tmp_path, case):
    base = torch.arange(12.0).reshape(3, 4)
    tensors = {
        "shared": {"a": base, "b": base},
        "overlap": {"a": base, "b": base[1:]},
        "non_contiguous": {"a": base.t()},
        "sparse": {"a": torch.sparse_coo_tensor(size=(2, 3))},
        "not_dict": "notadict",
        "not_tensor": {"a": {"some": "thing"}},
    }[case]
    theirs = refusal(lambda: st.save_file(tensors, str(tmp_path / "theirs.safetensors")))
    ours = refusal(lambda: ringload.save_file(tensors, str(tmp_path / "ours.safetensors")))
    assert theirs[0] is not None
    assert issubclass(ours[0], theirs[0]) and ours[1] == theirs[1]
    assert refusal(lambda: ringload.save(tensors)) == ours
    assert not (tmp_path / "ours.safetensors").exists()


def test_metadata_values_must_be_str():
    for metadata in ({"k": 1}, {1: "v"}, {"k": None}):
        assert refusal(lambda: st.save({"a": torch.ones(1)}, metadata=metadata))[0] is TypeError
        with pytest.raises(TypeError, match="str to str"):
            ringload.save({"a": torch.ones(1)}, metadata=metadata)


def test_missing_file_is_file_not_found(tmp_path):
    missing = str(tmp_path / "nope.safetensors")
    for call in (lambda: ringload.safe_open(missing, framework="pt"), lambda: ringload.load_file(missing),
                 lambda: ringload.load_model(torch.nn.Linear(1, 1), missing)):
        with pytest.raises(FileNotFoundError, match=f"No such file or directory: {missing}") as caught:
            call()
        assert isinstance(caught.value, ringload.SourceError)


@pytest.mark.parametrize("content, words", [
    (b"abc", "fewer than the 8-byte header length"),
    (struct.pack("<Q", 1000) + b'{"a":1}', "says 1000 bytes, but only 7 follow it"),
    (struct.pack("<Q", 0) + b"{}", "is 0"),
    (struct.pack("<Q", 7) + b"[1,2,3]", "does not start with '{'"),
    (struct.pack("<Q", 1 << 40) + b"{}", "more than safetensors' limit"),
])
def test_a_bad_header_says_what_is_wrong(tmp_path, content, words):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    assert refusal(lambda: st.load_file(str(path)))[0] is not None  # safetensors refuses it too
    for call in (lambda: ringload.safe_open(str(path), framework="pt"), lambda: ringload.load_file(str(path))):
        with pytest.raises(ringload.SafetensorError) as caught:
            call()
        assert str(path) in str(caught.value) and words in str(caught.value)
        assert "unrecognised first bytes" not in str(caught.value)
    with pytest.raises(ringload.FormatError, match=words.replace("(", r"\(").replace("[", r"\[")):
        ringload.load(content)


# --- safe_open ---------------------------------------------------------------------------------

def slice_indexes(shape):
    """Indexes for a tensor of `shape`: ints (negative too), ranges (None, negative, empty,
    not dividing the size), steps, an Ellipsis, () and []."""
    if not shape:
        return [(), Ellipsis]
    first = shape[0]
    indexes = [(), slice(None), slice(1, None), slice(None, max(first - 1, 0)), slice(-2, None),
               slice(first // 3, first - first // 3), slice(0, 0), slice(None, None, 2), Ellipsis]
    if first:
        indexes += [0, first - 1, -1]
    if len(shape) > 1:
        second = shape[1]
        indexes += [(slice(None), slice(1, None)), (Ellipsis, slice(0, second // 2)),
                    (slice(min(1, first), min(3, first)), slice(None, None, 3))]
        if second:
            indexes += [(slice(None), -1), (slice(2, None), 0)]
    return indexes


def test_safe_open_matches_safetensors_and_torch(tmp_path):
    state = peer_state()
    path = str(tmp_path / "theirs.safetensors")
    st.save_file(state, path, metadata={"format": "pt"})
    with safetensors.safe_open(path, framework="pt") as theirs, ringload.safe_open(path, framework="pt") as ours:
        assert ours.keys() == theirs.keys() == sorted(state)
        assert ours.metadata() == theirs.metadata() == {"format": "pt"}
        for name, tensor in state.items():
            got = ours.get_tensor(name)
            assert got.dtype == tensor.dtype and torch.equal(got, tensor), name
            part, peer_part = ours.get_slice(name), theirs.get_slice(name)
            assert part.get_shape() == peer_part.get_shape() == list(tensor.shape)
            assert part.get_dtype() == peer_part.get_dtype()
            for index in slice_indexes(tuple(tensor.shape)):
                want = tensor[index]
                sliced = part[index]
                assert sliced.dtype == want.dtype and sliced.shape == want.shape, (name, index)
                assert torch.equal(sliced, want), (name, index)
        assert ours.total_bytes_read > 0


def test_get_slices_many_at_once(tmp_path):
    state = peer_state()
    path = str(tmp_path / "m.safetensors")
    ringload.save_file(state, path)
    wanted = [("f32", (slice(2, 5), slice(None))), ("i64", (1, slice(None), 0)), ("f32", 0), ("scalar", ())]
    with ringload.safe_open(path) as f:
        got = f.get_slices(wanted)
    for (name, index), tensor in zip(wanted, got):
        assert torch.equal(tensor, state[name][index]), (name, index)


def test_slice_errors_in_recent_safetensors_words(tmp_path):
    path = str(tmp_path / "m.safetensors")
    ringload.save_file({"a": torch.arange(50.0).reshape(10, 5)}, path)
    with ringload.safe_open(path, framework="pt") as f:
        part = f.get_slice("a")
        cases = [
            ((slice(2, None), -6), "Invalid index -6 for dimension 1 of size 5"),
            ((slice(2, None), 20), "Error during slicing [2:, 20] with shape [10, 5]: index 20 out of bounds for "
                                  "tensor dimension #1 of size 5"),
            (slice(None, 20), "Error during slicing [:20] with shape [10, 5]: index 19 out of bounds for tensor "
                             "dimension #0 of size 10"),
            ((slice(None), slice(None, 20)), "Error during slicing [:, :20] with shape [10, 5]: index 19 out of "
                                            "bounds for tensor dimension #1 of size 5"),
            ((0, 0, 0), "Error during slicing [0, 0, 0] with shape [10, 5]: more slicing indexes than dimensions "
                       "in tensor"),
        ]
        for index, words in cases:
            with pytest.raises(ringload.SafetensorError) as caught:
                part[index]
            assert str(caught.value) == words
            assert isinstance(caught.value, IndexError)  # as torch's indexing (and safetensors 0.4) raises
        with pytest.raises(ringload.SafetensorError, match="^Non empty lists are not implemented$"):
            part[[0, 1]]
        with pytest.raises(ValueError, match="step must be positive"):
            part[::-1]
        with pytest.raises(ringload.SafetensorError, match="^File does not contain tensor b$"):
            f.get_tensor("b")
        with pytest.raises(ringload.SafetensorError, match="^File does not contain tensor b$"):
            f.get_slice("b")
    with pytest.raises(ringload.SafetensorError, match="^File is closed$"):
        f.keys()
    with pytest.raises(ringload.SafetensorError, match="^File is closed$"):
        part[0]


def test_get_tensor_reads_only_that_tensor(tmp_path):
    path = str(tmp_path / "big.safetensors")
    big = 8 << 20
    ringload.save_file({"a": torch.ones(big // 4), "b": torch.zeros(big // 4)}, path)
    with ringload.safe_open(path) as f:
        assert f.total_bytes_read == 0  # opening reads only the index
        assert torch.equal(f.get_tensor("b"), torch.zeros(big // 4))
        assert big <= f.total_bytes_read < 2 * big


def test_framework_np(tmp_path):
    path = str(tmp_path / "m.safetensors")
    tensor = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    ringload.save_file({"a": tensor}, path)
    with ringload.safe_open(path, framework="np") as f:
        assert (f.get_tensor("a") == tensor.numpy()).all()
        assert (f.get_slice("a")[1:, 2] == tensor.numpy()[1:, 2]).all()


def write_every_format(folder, state):
    paths = {"safetensors": str(folder / "m.safetensors"), "torch": str(folder / "m.pt"),
             "tensorizer": str(folder / "m.tensors")}
    ringload.save_file(state, paths["safetensors"], metadata={"origin": "test"})
    torch.save(state, paths["torch"])
    with ringload.TensorSerializer(paths["tensorizer"]) as serializer:
        serializer.write_state_dict(state)
    return paths


@pytest.mark.parametrize("format", ["safetensors", "torch", "tensorizer"])
def test_safe_open_reads_every_format(tmp_path, format):
    state = peer_state()
    path = write_every_format(tmp_path, state)[format]
    with ringload.safe_open(path, framework="pt") as f:
        assert f.keys() == sorted(state)
        assert f.metadata() == ({"origin": "test"} if format == "safetensors" else None)
        assert sorted(f.offset_keys()) == sorted(state)
        for name, tensor in state.items():
            assert torch.equal(f.get_tensor(name), tensor), name
            for index in slice_indexes(tuple(tensor.shape)):
                assert torch.equal(f.get_slice(name)[index], tensor[index]), (name, index)


def test_save_model_and_load_model_as_safetensors(tmp_path):
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(5, 3)
            self.b = self.a
    torch.manual_seed(3)
    model = Tied()
    ringload.save_model(model, str(tmp_path / "ours.safetensors"))
    st.save_model(model, str(tmp_path / "theirs.safetensors"))
    with safetensors.safe_open(str(tmp_path / "ours.safetensors"), framework="pt") as f:
        assert f.metadata() == {"b.bias": "a.bias", "b.weight": "a.weight"}
        assert sorted(f.keys()) == ["a.bias", "a.weight"]
    # Equal bytes after the header (its metadata order is a hash map's in safetensors).
    ours, theirs = ((tmp_path / n).read_bytes() for n in ("ours.safetensors", "theirs.safetensors"))
    assert ours[8 + struct.unpack("<Q", ours[:8])[0]:] == theirs[8 + struct.unpack("<Q", theirs[:8])[0]:]
    for path in ("ours.safetensors", "theirs.safetensors"):
        fresh = Tied()
        assert ringload.load_model(fresh, str(tmp_path / path)) == st.load_model(Tied(), str(tmp_path / path))
        for name, tensor in model.state_dict().items():
            assert torch.equal(fresh.state_dict()[name], tensor), name
    other = torch.nn.Sequential(torch.nn.Linear(5, 3))
    missing, unexpected = ringload.load_model(other, str(tmp_path / "ours.safetensors"), strict=False)
    assert (sorted(missing), sorted(unexpected)) == (["0.bias", "0.weight"], ["a.bias", "a.weight"])
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0.bias", "0.weight"'):
        ringload.load_model(other, str(tmp_path / "ours.safetensors"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_safe_open_on_a_gpu(tmp_path):
    state = peer_state()
    path = str(tmp_path / "m.safetensors")
    ringload.save_file(state, path)
    with ringload.safe_open(path, framework="pt", device="cuda:0") as f:
        for name, tensor in state.items():
            got = f.get_tensor(name)
            assert got.device == torch.device("cuda:0") and torch.equal(got.cpu(), tensor), name
            part = f.get_slice(name)[slice_indexes(tuple(tensor.shape))[-1]]
            assert part.device == torch.device("cuda:0")
    loaded = ringload.load_file(path, device=0)
    assert all(loaded[name].device == torch.device("cuda:0") for name in state)


# --- over HTTP, from a real nginx ----------------------------------------------------------------

@pytest.fixture(scope="module")
def served():
    import pathlib
    import shutil
    import tempfile
    root = pathlib.Path(tempfile.mkdtemp(prefix="ringload-safe-open-"))  # in /tmp: nginx's workers reach it
    try:
        state = peer_state()
        paths = write_every_format(root, state)
        os.chmod(root, 0o755)  # nginx's workers may run as another user
        for path in paths.values():
            os.chmod(path, 0o644)
        with Nginx(str(root), access_log=True) as server:  # nginx missing or not starting: an error
            yield server, state, {format: os.path.basename(path) for format, path in paths.items()}
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("format", ["safetensors", "torch", "tensorizer"])
def test_safe_open_over_http(served, format):
    server, state, names = served
    url = f"{server.http_url}/{names[format]}"
    with ringload.safe_open(url, framework="pt") as f:
        assert f.keys() == sorted(state)
        assert f.metadata() == ({"origin": "test"} if format == "safetensors" else None)
        assert torch.equal(f.get_tensor("f32"), state["f32"])
        assert torch.equal(f.get_slice("i64")[1:3, :, -1], state["i64"][1:3, :, -1])
        assert f.total_bytes_read > 0
    with pytest.raises(FileNotFoundError):
        ringload.safe_open(f"{server.http_url}/missing.safetensors", framework="pt")


# --- from S3 (moto) and Redis (redis-server) ----------------------------------------------------

def test_safe_open_from_s3(tmp_path, monkeypatch):
    state = peer_state()
    paths = write_every_format(tmp_path, state)
    s3 = MotoServer().__enter__()  # moto missing or not starting: an error
    try:
        admin = s3.client()
        admin.create_bucket(Bucket="models")
        for path in paths.values():
            admin.upload_file(path, "models", os.path.basename(path))
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "admin")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "admin")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        for format, path in paths.items():
            with ringload.safe_open(f"s3://models/{os.path.basename(path)}", framework="pt",
                                    s3_endpoint=s3.url) as f:
                assert f.keys() == sorted(state), format
                assert torch.equal(f.get_tensor("bf16"), state["bf16"]), format
                assert torch.equal(f.get_slice("f32")[:, 3:-3], state["f32"][:, 3:-3]), format
        with pytest.raises(FileNotFoundError):
            ringload.safe_open("s3://models/missing.safetensors", framework="pt", s3_endpoint=s3.url)
    finally:
        s3.__exit__(None, None, None)


def test_safe_open_from_redis():
    state = peer_state()
    server = RedisServer().__enter__()  # redis-server missing or not starting: an error
    try:
        uri = server.uri + "/model"
        with ringload.TensorSerializer(uri) as serializer:
            serializer.write_state_dict(state)
        with ringload.safe_open(uri, framework="pt") as f:
            assert f.keys() == sorted(state)
            assert f.metadata() is None
            for name, tensor in state.items():
                assert torch.equal(f.get_tensor(name), tensor), name
            assert torch.equal(f.get_slice("i64")[-2:, 1], state["i64"][-2:, 1])
    finally:
        server.__exit__(None, None, None)
