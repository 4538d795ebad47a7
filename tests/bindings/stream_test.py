"""tests/bindings/stream_test.py: the streamed hand-over through the Python package.

ringload.stream_tensors and TensorDeserializer.read_tensors (lazy_load=True) hand each tensor
over as it lands: the same tensors as load_file for the three formats (files written by the
real safetensors and torch, and by our tensorizer writer), encrypted and hash-verified ones
too (a tensor whose hash fails is never handed over); over HTTP from a real nginx that sends
slowly (limit_rate), the first tensor arrives, usable and equal to the file's, well before
the last; and leaving a stream half-way cancels the load cleanly: no thread left behind, and
the file loads again at once.

Run by ctest (test `stream_python`) with PYTHONPATH at <build>/bindings/python and
RINGLOAD_TEST_DATA at tests/data.
"""
import gc
import os
import shutil
import sys
import tempfile
import time

import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")
import ringload  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))


def thread_count():
    return len(os.listdir("/proc/self/task"))


def raw(tensor):
    """The tensor's bytes in C order (every dtype, also those torch cannot compare)."""
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


def assert_same(got: dict, expected: dict):
    assert sorted(got) == sorted(expected)
    for name, tensor in expected.items():
        assert got[name].dtype == tensor.dtype, name
        assert got[name].shape == tensor.shape, name
        assert raw(got[name]) == raw(tensor), name


def state(count=40, rows=64, seed=5):
    generator = torch.Generator().manual_seed(seed)
    tensors = {f"layers.{i}.weight": torch.randn(rows, 1024, generator=generator) for i in range(count)}
    tensors["embed"] = torch.randn(3, 5, generator=generator).half()
    tensors["ids"] = torch.arange(11)
    tensors["scalar"] = torch.tensor(2.5)
    tensors["empty"] = torch.zeros(0, 3)
    return tensors


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("stream")
    tensors = state()
    paths = {"safetensors": str(root / "m.safetensors"), "torch": str(root / "m.pt"),
             "tensorizer": str(root / "m.tensors")}
    safetensors_torch.save_file(tensors, paths["safetensors"])
    # torch: views that share a storage, and a transposed (non-contiguous) one.
    base = torch.randn(32, 48, generator=torch.Generator().manual_seed(9))
    torch.save({**tensors, "view.rows": base[4:20], "view.all": base, "view.t": base.t()}, paths["torch"])
    with ringload.TensorSerializer(paths["tensorizer"]) as writer:
        writer.write_state_dict(tensors)
    return paths


@pytest.mark.parametrize("fmt", ["safetensors", "torch", "tensorizer"])
def test_streamed_tensors_equal_load_file(files, fmt):
    expected = ringload.load_file(files[fmt])
    got = {}
    for name, tensor in ringload.stream_tensors(files[fmt]):
        assert name not in got, f"{name} handed over twice"
        got[name] = tensor
    assert_same(got, expected)
    # A dtype on the way: each tensor converted as soon as it landed.
    halves = dict(ringload.stream_tensors(files[fmt], dtype=torch.float16))
    assert_same(halves, ringload.load_file(files[fmt], dtype=torch.float16))


def test_a_mapped_placement_loads_and_streams_the_files_bytes(files, tmp_path):
    """placement="mapped" leaves safetensors tensors in the file's pages: the same tensors as
    safetensors' own reader, loaded and streamed; other formats are refused with the reason."""
    expected = safetensors_torch.load_file(files["safetensors"])
    assert_same(ringload.load_file(files["safetensors"], placement="mapped"), expected)
    assert_same(dict(ringload.stream_tensors(files["safetensors"], placement="mapped")), expected)
    assert_same(ringload.load_file(files["safetensors"], placement="arena"), expected)
    with pytest.raises(Exception, match="only safetensors files are mapped, this is a tensorizer file"):
        ringload.load_file(files["tensorizer"], placement="mapped")
    with pytest.raises(Exception, match="cannot leave the tensors in the file's pages: only safetensors"):
        dict(ringload.stream_tensors(files["torch"], placement="mapped"))
    with pytest.raises(ValueError, match="placement must be 'auto', 'arena' or 'mapped'"):
        ringload.load_file(files["safetensors"], placement="pages")


def test_torch_views_share_their_storage_when_streamed(files):
    got = dict(ringload.stream_tensors(files["torch"]))
    assert torch.equal(got["view.rows"], got["view.all"][4:20])
    assert torch.equal(got["view.t"], got["view.all"].t()) and got["view.t"].is_contiguous()


def test_tensorizer_fixtures_stream_as_they_load():
    for name in ("basic_v1", "large_mixed_v2", "meta_v4", "module_v1", "nested_structure_v1", "noncontiguous_v1",
                 "scalar_v1", "zero_size_v1", "unicode_names_v1"):
        path = os.path.join(DATA, "tensorizer", name + ".tensors")
        assert_same(dict(ringload.stream_tensors(path)), ringload.load_file(path))


def test_encrypted_and_verified_tensors_stream(tmp_path):
    tensors = state(count=12)
    params = ringload.EncryptionParams.random()
    path = str(tmp_path / "enc.tensors")
    with ringload.TensorSerializer(path, encryption=params) as writer:
        writer.write_state_dict(tensors)
    key = ringload.DecryptionParams.from_key(params.key)
    got = dict(ringload.stream_tensors(path, encryption=key, verify_hash=True))
    assert_same(got, tensors)


def test_a_tensor_whose_hash_fails_is_never_handed_over(tmp_path):
    tensors = state(count=12)
    marked = torch.full((64, 1024), 1234.5)  # a pattern found once in the file
    tensors["layers.5.weight"] = marked
    path = tmp_path / "corrupt.tensors"
    with ringload.TensorSerializer(str(path)) as writer:
        writer.write_state_dict(tensors)
    data = bytearray(path.read_bytes())
    at = data.find(marked[0, :4].numpy().tobytes())
    assert at > 0
    data[at + 1000] ^= 0xFF
    path.write_bytes(bytes(data))
    seen = []
    with pytest.raises(ringload.HashMismatchError, match="layers.5.weight"):
        for name, tensor in ringload.stream_tensors(str(path), verify_hash=True):
            seen.append(name)
            assert torch.equal(tensor, tensors[name]), name
    assert "layers.5.weight" not in seen
    # Without verify_hash it loads, wrong byte and all (as tensorizer does).
    assert len(dict(ringload.stream_tensors(str(path)))) == len(tensors)


def test_read_tensors_streams_what_is_not_loaded_yet(files):
    expected = ringload.load_file(files["tensorizer"])
    lazy = ringload.TensorDeserializer(files["tensorizer"], device="cpu", lazy_load=True)
    first = lazy["ids"]  # loaded before: comes from the cache
    rows = list(lazy.read_tensors())
    assert sorted(name for _, _, name, _ in rows) == sorted(expected)
    for module_idx, tensor_type, name, tensor in rows:
        assert torch.equal(tensor, expected[name]), name
    assert dict((name, t) for _, _, name, t in rows)["ids"] is first
    assert lazy["embed"] is dict((name, t) for _, _, name, t in rows)["embed"]  # cached as they land
    eager = ringload.TensorDeserializer(files["tensorizer"], device="cpu")
    assert [name for _, _, name, _ in eager.read_tensors(num_tensors=3)] == list(eager.keys())[:3]


@pytest.fixture(scope="module")
def slow_file():
    """A safetensors file from a real nginx through a proxy that forwards 4 MB/s per connection."""
    from fault_proxy import FaultProxy
    from nginx import Nginx
    tensors = state(count=48, rows=64)  # 48 tensors of 256 KiB: 12 MiB, ~1.5 s over 2 connections
    # Not under pytest's tmp_path, whose parent only its owner may enter: nginx's workers may
    # run as another user.
    root = tempfile.mkdtemp(prefix="ringload-stream-")
    os.chmod(root, 0o755)
    path = os.path.join(root, "m.safetensors")
    safetensors_torch.save_file(tensors, path)
    os.chmod(path, 0o644)
    try:
        server = Nginx(root)
    except RuntimeError as error:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(str(error))
    with server, FaultProxy(server.http_port) as proxy:
        proxy.slow = lambda: proxy.schedule(["slow:4000000"] * 64)
        yield proxy, proxy.url + "/m.safetensors", tensors
    shutil.rmtree(root, ignore_errors=True)


def test_over_slow_http_the_first_tensor_is_usable_long_before_the_last(slow_file):
    proxy, url, tensors = slow_file
    proxy.slow()
    stream = ringload.stream_tensors(url, slot_size=256 << 10, connections=2, http_version="1.1")
    started = time.perf_counter()  # the file is open; the load starts with the first next()
    arrivals = []
    for name, tensor in stream:
        arrivals.append(time.perf_counter() - started)
        assert torch.equal(tensor, tensors[name]), name  # usable as it lands, with the file's bytes
    assert len(arrivals) == len(tensors)
    first, last = arrivals[0], arrivals[-1]
    print(f"first tensor at {first:.3f} s, last at {last:.3f} s")
    assert last > 0.5, f"the server was not slow ({last:.2f} s): the check below means nothing"
    assert first < 0.25 * last, f"first tensor at {first:.2f} s, last at {last:.2f} s"


def test_leaving_a_stream_half_way_cancels_the_load(slow_file):
    proxy, url, tensors = slow_file
    proxy.slow()
    before = thread_count()
    # A small ring of short ranges: a cancel waits for the reads in flight (an HTTP range is
    # not cut short), so these bound how long it may take.
    options = dict(slot_size=256 << 10, ring_bytes=1 << 20, range_size=256 << 10, connections=2,
                   http_version="1.1")
    # close() half-way
    stream = ringload.stream_tensors(url, **options)
    for k, _ in enumerate(stream):
        if k == 3:
            break
    started = time.perf_counter()
    stream.close()
    assert time.perf_counter() - started < 0.6, "closing waited for the whole load"
    # an exception in the consumer
    with pytest.raises(KeyError):
        for name, tensor in ringload.stream_tensors(url, **options):
            raise KeyError(name)
    # an iterator dropped without closing
    stream = ringload.stream_tensors(url, **options)
    next(stream)
    del stream
    gc.collect()
    assert thread_count() <= before, "a load thread outlived its stream"
    # the file loads again, whole
    assert_same(dict(ringload.stream_tensors(url, **options)), tensors)


def test_leaving_a_local_stream_half_way_then_loading_again(files):
    expected = ringload.load_file(files["safetensors"])
    for _ in range(5):
        stream = ringload.stream_tensors(files["safetensors"], slot_size=64 << 10, ring_bytes=256 << 10)
        name, tensor = next(stream)
        assert torch.equal(tensor, expected[name])
        stream.close()
    assert_same(dict(ringload.stream_tensors(files["safetensors"])), expected)
