"""tests/bindings/python_api_test.py: the ringload Python package against the real tensorizer.

The same scenarios run through `tensorizer` (PyPI, the project's .venv) and `ringload`, and the
results must be equal on every fixture: state dict contents (nested ones too), filter_func,
verify_hash, encrypted files (key and passphrase), dtype=, read_numpy_arrays, load_into_module,
and files each side wrote read by the other. Beyond tensorizer: load_into_module fills the
module's own storage (no reallocation), errors are ringload.errors classes, device="meta"
reads nothing, and 100 deserializers loaded and dropped leave RSS flat. A stream that refuses
reads past its end (tensorizer's CURLStreamFile, mimicked and real) loads as the file does.

Run by ctest (test `python_api`) with PYTHONPATH at <build>/bindings/python and
RINGLOAD_TEST_DATA at tests/data.
"""
import functools
import gc
import hashlib
import http.client
import http.server
import io
import json
import os
import shutil
import threading

import pytest

torch = pytest.importorskip("torch")
tensorizer = pytest.importorskip("tensorizer")
import ringload  # noqa: E402

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
FIXTURES = os.path.join(DATA, "tensorizer")
INDEX = json.load(open(os.path.join(FIXTURES, "index.json")))
FILES = [entry["file"] for entry in INDEX["files"]]


def manifest(file):
    return json.load(open(os.path.join(FIXTURES, file + ".json")))


def raw(tensor):
    tensor = tensor.detach().cpu().contiguous()
    return tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


def secrets(file):
    """(tensorizer's DecryptionParams, ringload's) for a fixture, or (None, None)."""
    encryption = manifest(file).get("encryption")
    if not encryption:
        return None, None
    if encryption["kind"] == "raw_key":
        key = bytes.fromhex(encryption["key_hex"])
        return tensorizer.DecryptionParams.from_key(key), ringload.DecryptionParams.from_key(key)
    return (tensorizer.DecryptionParams.from_string(encryption["passphrase"]),
            ringload.DecryptionParams.from_string(encryption["passphrase"]))


def flatten(value, prefix=()):
    """{path: tensor} of a mapping/sequence tree (tensorizer's proxies, ours, dicts, lists)."""
    if isinstance(value, torch.Tensor):
        return {prefix: value}
    items = value.items() if hasattr(value, "items") else enumerate(value)
    out = {}
    for key, item in items:
        out.update(flatten(item, prefix + (key,)))
    return out


def assert_same_tensors(theirs, ours):
    assert set(theirs) == set(ours)
    for key in theirs:
        a, b = theirs[key], ours[key]
        assert a.dtype == b.dtype, key
        assert tuple(a.shape) == tuple(b.shape), key
        assert raw(a) == raw(b), key


@pytest.mark.parametrize("file", FILES)
@pytest.mark.parametrize("verify", [False, True])
def test_state_dict_equals_tensorizers(file, verify):
    path = os.path.join(FIXTURES, file)
    theirs_key, ours_key = secrets(file)
    theirs = tensorizer.TensorDeserializer(path, device="cpu", verify_hash=verify, encryption=theirs_key)
    with ringload.TensorDeserializer(path, device="cpu", verify_hash=verify, encryption=ours_key) as ours:
        assert list(ours.keys()) == list(theirs.keys())
        assert_same_tensors(flatten({k: theirs[k] for k in theirs}), flatten({k: ours[k] for k in ours}))
        assert_same_tensors(flatten(theirs.tree()), flatten(ours.tree()))
        assert ours.total_tensor_bytes == theirs.total_tensor_bytes
    theirs.close()


@pytest.mark.parametrize("file", ["large_mixed_v2.tensors", "module_v1.tensors", "unicode_names_v1.tensors"])
def test_filter_and_lazy_load_equal_tensorizers(file):
    path = os.path.join(FIXTURES, file)
    names = [n for n in tensorizer.TensorDeserializer(path, device="cpu", lazy_load=True).keys()]
    # Two names in three, by place: never none (a per-process str hash chose none of a small
    # file's names now and then, and tensorizer cannot load an empty choice: a pool of 0 threads).
    chosen = {n for k, n in enumerate(names) if k % 3 != 2}
    theirs = tensorizer.TensorDeserializer(path, device="cpu", filter_func=lambda n: n in chosen)
    ours = ringload.TensorDeserializer(path, device="cpu", filter_func=lambda n: n in chosen, lazy_load=True)
    assert set(ours.keys()) == set(theirs.keys()) == chosen
    assert_same_tensors(flatten(dict(theirs.items())), flatten(dict(ours.items())))
    # tensorizer's read_tensors yields what its stream has not yet handed out: a fresh one.
    fresh = tensorizer.TensorDeserializer(path, device="cpu", filter_func=lambda n: n in chosen, lazy_load=True)
    rows = [(idx, typ, name, raw(t)) for idx, typ, name, t in ours.read_tensors()]
    assert rows == [(idx, int(typ), name, raw(t)) for idx, typ, name, t in fresh.read_tensors()]


@pytest.mark.parametrize("file", ["large_mixed_v2.tensors", "opaque_bf16_c32_v2.tensors", "numpy_dtypes_v1.tensors"])
def test_read_numpy_arrays_equal_tensorizers(file):
    path = os.path.join(FIXTURES, file)
    theirs = list(tensorizer.TensorDeserializer(path, device="cpu", lazy_load=True)
                  .read_numpy_arrays(allow_raw_data=True))
    ours = list(ringload.TensorDeserializer(path, device="cpu", lazy_load=True)
                .read_numpy_arrays(allow_raw_data=True))
    assert len(ours) == len(theirs)
    for (i1, t1, n1, a1, o1, d1), (i2, t2, n2, a2, o2, d2) in zip(theirs, ours):
        assert (i1, int(t1), n1, o1, d1) == (i2, t2, n2, o2, d2)
        assert a1.dtype.itemsize == a2.dtype.itemsize and a1.shape == a2.shape and a1.tobytes() == a2.tobytes()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_dtype_equals_tensorizers_for_floating_tensors(dtype):
    path = os.path.join(FIXTURES, "large_mixed_v2.tensors")
    theirs = tensorizer.TensorDeserializer(path, device="cpu", dtype=dtype)
    ours = ringload.TensorDeserializer(path, device="cpu", dtype=dtype)
    stored = {row["name"]: row["dtype"] for row in manifest("large_mixed_v2.tensors")["tensors"]}
    for name in theirs.keys():
        if stored[name] in ("torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"):
            assert ours[name].dtype == dtype and raw(ours[name]) == raw(theirs[name]), name
        else:
            assert str(ours[name].dtype) == stored[name], name  # ringload keeps non-floating types


def test_verify_hash_catches_corruption_as_tensorizer_does(tmp_path):
    source = os.path.join(FIXTURES, "large_mixed_v2.tensors")
    corrupt = tmp_path / "corrupt.tensors"
    data = bytearray(open(source, "rb").read())
    data[-100] ^= 0x40
    corrupt.write_bytes(bytes(data))
    with pytest.raises(tensorizer.serialization.HashMismatchError):
        dict(tensorizer.TensorDeserializer(str(corrupt), device="cpu", verify_hash=True).items())
    with pytest.raises(ringload.HashMismatchError, match="corrupt.tensors"):
        ringload.TensorDeserializer(str(corrupt), device="cpu", verify_hash=True)


def test_errors_are_ringload_classes_that_name_the_file(tmp_path):
    with pytest.raises(ringload.SourceError, match="nothing-here.tensors"):
        ringload.TensorDeserializer(str(tmp_path / "nothing-here.tensors"), device="cpu")
    not_tensorizer = tmp_path / "plain.bin"
    not_tensorizer.write_bytes(b"hello world" * 100)
    with pytest.raises(ringload.FormatError, match="plain.bin"):
        ringload.TensorDeserializer(str(not_tensorizer), device="cpu")
    encrypted = os.path.join(FIXTURES, "encrypted_key_v3.tensors")
    with pytest.raises(ringload.DecryptionError):
        ringload.TensorDeserializer(encrypted, device="cpu")
    with pytest.raises(ringload.DecryptionError):
        ringload.TensorDeserializer(encrypted, device="cpu", encryption=ringload.DecryptionParams.from_key(bytes(32)))
    assert issubclass(ringload.SourceError, OSError) and issubclass(ringload.HashMismatchError, ringload.RingloadError)


def test_meta_device_reads_nothing():
    path = os.path.join(FIXTURES, "large_mixed_v2.tensors")
    d = ringload.TensorDeserializer(path, device="meta")
    theirs = tensorizer.TensorDeserializer(path, device="cpu", lazy_load=True)
    assert d.total_bytes_read == 0
    for name in theirs.keys():
        assert d[name].device.type == "meta"
        assert d[name].dtype == theirs[name].dtype and d[name].shape == theirs[name].shape


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(64, 16)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(16, 16) for _ in range(3)])
        self.norm = torch.nn.LayerNorm(16)
        self.register_buffer("steps", torch.arange(5))
        self.scale = torch.nn.Parameter(torch.tensor(2.0))


def module_state(m):
    return {k: raw(v) for k, v in m.state_dict().items()}


def test_load_into_module_equals_tensorizers_and_keeps_storage(tmp_path):
    torch.manual_seed(1)
    source = Tiny()
    path = str(tmp_path / "module.tensors")
    writer = tensorizer.TensorSerializer(path)
    writer.write_module(source)
    writer.close()
    theirs, ours = Tiny(), Tiny()
    before = {name: t.data_ptr() for name, t in ours.state_dict().items()}
    assert tensorizer.TensorDeserializer(path, device="cpu").load_into_module(theirs) == \
        ringload.TensorDeserializer(path, device="cpu", lazy_load=True).load_into_module(ours, verify_hash=True)
    assert module_state(ours) == module_state(theirs) == module_state(source)
    assert {name: t.data_ptr() for name, t in ours.state_dict().items()} == before  # its own storage


def test_files_ringload_writes_load_in_tensorizer(tmp_path):
    torch.manual_seed(2)
    module = Tiny()
    nested = {"model": {"layers": [{"w": torch.randn(4, 4), "b": torch.randn(4).to(torch.bfloat16)}] * 2},
              "ids": torch.arange(7), "flat.name": torch.randn(3, dtype=torch.float64)}
    for encryption in (None, "key", "passphrase"):
        if encryption == "key":
            ours_params = ringload.EncryptionParams.random()
            theirs_key = tensorizer.DecryptionParams.from_key(ours_params.key)
        elif encryption == "passphrase":
            ours_params = ringload.EncryptionParams.from_string("correct horse", opslimit=1, memlimit=8 << 20)
            theirs_key = tensorizer.DecryptionParams.from_string("correct horse")
        else:
            ours_params = theirs_key = None
        module_path, dict_path = str(tmp_path / "m.tensors"), str(tmp_path / "sd.tensors")
        with ringload.TensorSerializer(module_path, encryption=ours_params) as writer:
            writer.write_module(module)
        loaded = Tiny()
        tensorizer.TensorDeserializer(module_path, device="cpu", verify_hash=True,
                                      encryption=theirs_key).load_into_module(loaded)
        assert module_state(loaded) == module_state(module)
        with ringload.TensorSerializer(dict_path, encryption=ours_params) as writer:
            writer.write_state_dict(nested)
        theirs = tensorizer.TensorDeserializer(dict_path, device="cpu", verify_hash=True, encryption=theirs_key)
        assert_same_tensors(flatten(nested), flatten(theirs.tree()))


def test_rss_stays_flat_over_100_deserializers():
    path = os.path.join(FIXTURES, "large_mixed_v2.tensors")

    def rss():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) * 1024

    for _ in range(10):  # warm up: allocator pools, torch's first use
        dict(ringload.TensorDeserializer(path, device="cpu").items())
    gc.collect()
    start = rss()
    for _ in range(100):
        d = ringload.TensorDeserializer(path, device="cpu", verify_hash=True)
        total = sum(t.numel() for t in d.values())
        d.close()
        del d
    gc.collect()
    grown = rss() - start
    assert total > 0
    assert grown < 64 << 20, f"RSS grew {grown >> 20} MiB over 100 loads"


class StrictStream(io.BufferedIOBase):
    """`data` as tensorizer's CURLStreamFile (stream_io.py, opened without `end`) serves it: a read
    or readinto asking for more than remains raises "Requested N != M" and closes the stream,
    read() with no size reads the rest, seek() returns None and refuses SEEK_END (but to where
    it is), fileno() is -1, and the size is told only by the response headers it keeps
    (curl --include): Content-Length, or Content-Range when opened at `begin`."""

    def __init__(self, data: bytes, begin: int = 0):
        super().__init__()
        self._data, self._curr, self._closed = data, begin, False
        field = (f"Content-Range: bytes {begin}-{len(data) - 1}/{len(data)}" if begin
                 else f"Content-Length: {len(data)}")
        self.response_headers = http.client.parse_headers(io.BytesIO(f"{field}\r\n\r\n".encode()))

    def _take(self, requested: int) -> bytes:
        got = self._data[self._curr:self._curr + requested] if requested >= 0 else self._data[self._curr:]
        if len(got) != requested:
            self._closed = True
            raise IOError(f"Requested {requested} != {len(got)}")
        self._curr += len(got)
        return got

    def read(self, size=None) -> bytes:
        if self._closed:
            raise IOError("CURLStreamFile closed.")
        if size is None:
            got, self._curr = self._data[self._curr:], len(self._data)
            return got
        return self._take(size)

    def readinto(self, ba) -> int:
        got = self._take(len(ba))
        ba[:len(got)] = got
        return len(got)

    def tell(self) -> int:
        return self._curr

    def seek(self, position, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR:
            position += self._curr
        if position == self._curr:
            return
        if whence == io.SEEK_END:
            raise ValueError("Unsupported `whence`")
        if position > self._curr:
            self._take(position - self._curr)
        else:
            self._curr = position  # CURLStreamFile opens a new request from there

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed


@pytest.fixture(scope="module")
def streamed_file(tmp_path_factory):
    """A file the real tensorizer wrote, not a multiple of 8 MiB (the copy's chunk) and over two."""
    torch.manual_seed(3)
    tensors = {"big": torch.randn(4_400_000), "ids": torch.arange(7), "half": torch.randn(33, 5).half()}
    path = str(tmp_path_factory.mktemp("stream") / "streamed.tensors")
    writer = tensorizer.TensorSerializer(path)
    writer.write_state_dict(tensors)
    writer.close()
    assert os.path.getsize(path) % (8 << 20) != 0
    return path


def assert_stream_loads_as_the_file(path, stream):
    theirs = tensorizer.TensorDeserializer(path, device="cpu", verify_hash=True)
    with ringload.TensorDeserializer(stream, device="cpu", verify_hash=True) as ours:
        assert list(ours.keys()) == list(theirs.keys())
        assert_same_tensors(flatten({k: theirs[k] for k in theirs}), flatten({k: ours[k] for k in ours}))
    theirs.close()


@pytest.mark.parametrize("file", ["large_mixed_v2.tensors", "tiny_v1.tensors", "written"])
@pytest.mark.parametrize("begin", [0, 100])
def test_strict_stream_loads_as_tensorizer_reads_the_file(file, begin, streamed_file):
    path = streamed_file if file == "written" else os.path.join(FIXTURES, file)
    data = open(path, "rb").read()
    stream = StrictStream(bytes(begin) + data, begin)  # at 100: opened past 100 bytes that are not the file
    assert_stream_loads_as_the_file(path, stream)
    assert stream.tell() == begin + len(data) and not stream.closed
    with tensorizer.TensorDeserializer(StrictStream(data), device="cpu") as theirs:  # tensorizer reads it too
        ours = ringload.TensorDeserializer(path, device="cpu")
        assert_same_tensors(flatten(dict(theirs.items())), flatten(dict(ours.items())))


def test_curl_stream_file_loads_as_tensorizer_reads_the_file(streamed_file):
    if not shutil.which("curl"):
        pytest.skip("CURLStreamFile needs curl")
    from tensorizer.stream_io import CURLStreamFile

    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # CURLStreamFile takes "HTTP/1.1 2xx" or "HTTP/2 2xx" only

        def log_message(self, *args):
            pass

    handler = functools.partial(Handler, directory=os.path.dirname(streamed_file))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/{os.path.basename(streamed_file)}"
        try:
            with CURLStreamFile(url) as stream:
                assert_stream_loads_as_the_file(streamed_file, stream)
        finally:
            server.shutdown()
