"""tests/bindings/stream_test.py: the streamed hand-over through the Python package.

ringload.stream_tensors and TensorDeserializer.read_tensors (lazy_load=True) hand each tensor
over as it lands: the tensors each format's own library reads from the file (PyPI safetensors,
torch.load, the real tensorizer; files written by safetensors, torch and our tensorizer writer)
and the tensorizer fixtures' manifests; encrypted and hash-verified ones too (a tensor whose hash
fails is never handed over). Over HTTP from a real nginx, through a proxy that lets a quarter of
the file through and holds the rest back until told: the first tensor is handed over, usable and
equal to the file's, while the rest is still held; and leaving a stream half-way (close, an
exception, the iterator dropped) returns with the rest still held, after which the load makes
no request and opens no connection: no thread left behind, and the file loads again at once.
Nothing here compares wall-clock times: the timeouts only keep a broken build from hanging.

A server that does not start (nginx) is an error, not a skip.

Run by ctest (test `stream_python`) with PYTHONPATH at <build>/bindings/python and
RINGLOAD_TEST_DATA at tests/data.
"""
import asyncio
import contextlib
import gc
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import types

import pytest
import safetensors.torch as safetensors_torch
import tensorizer
import torch

import ringload

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from fault_proxy import FaultProxy  # noqa: E402
from nginx import Nginx  # noqa: E402

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
# Only against a hang: a correct load needs a small part of this.
HANG_GUARD = 60


def thread_count():
    return len(os.listdir("/proc/self/task"))


def raw(tensor):
    """The tensor's bytes in C order (every dtype, also those torch cannot compare)."""
    tensor = tensor.detach().contiguous()
    return tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


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


def peer_read(fmt, path):
    """{name: tensor} as the format's own library reads the file: PyPI safetensors, torch.load
    (weights_only), the real tensorizer."""
    if fmt == "safetensors":
        return safetensors_torch.load_file(path)
    if fmt == "torch":
        return torch.load(path, weights_only=True)
    with tensorizer.TensorDeserializer(path, device="cpu") as loaded:
        return {name: loaded[name].detach().clone() for name in loaded.keys()}


@pytest.mark.parametrize("fmt", ["safetensors", "torch", "tensorizer"])
def test_streamed_tensors_equal_the_formats_own_reader(files, fmt):
    expected = peer_read(fmt, files[fmt])
    got = {}
    for name, tensor in ringload.stream_tensors(files[fmt]):
        assert name not in got, f"{name} handed over twice"
        got[name] = tensor
    assert_same(got, expected)
    # A dtype on the way: each floating tensor converted as soon as it landed, as torch converts it.
    halves = dict(ringload.stream_tensors(files[fmt], dtype=torch.float16))
    assert_same(halves, {name: tensor.half() if tensor.is_floating_point() else tensor
                         for name, tensor in expected.items()})


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
    with pytest.raises(ValueError, match="option placement must be one of auto, arena, mapped, not 'pages'"):
        ringload.load_file(files["safetensors"], placement="pages")


def test_torch_views_share_their_storage_when_streamed(files):
    got = dict(ringload.stream_tensors(files["torch"]))
    assert torch.equal(got["view.rows"], got["view.all"][4:20])
    assert torch.equal(got["view.t"], got["view.all"].t()) and got["view.t"].is_contiguous()


def manifest_name(tensor):
    """The name a manifest's tensor is handed over under: a flat name as it is in the file, a
    structured one (or a list index) as its path joined with '.'."""
    path = tensor["path"]
    if len(path) == 1 and isinstance(path[0], str):
        return bytes.fromhex(tensor["serialized_name_hex"]).decode("utf-8", "surrogateescape")
    return ".".join(str(part) for part in path)


@pytest.mark.parametrize("fixture", ["basic_v1", "large_mixed_v2", "meta_v4", "module_v1", "nested_structure_v1",
                                     "noncontiguous_v1", "scalar_v1", "zero_size_v1", "unicode_names_v1"])
def test_tensorizer_fixtures_stream_as_their_manifests_say(fixture):
    """Each tensor's dtype, shape and sha256 as the real tensorizer loaded it (the manifest)."""
    path = os.path.join(DATA, "tensorizer", fixture + ".tensors")
    with open(path + ".json") as f:
        manifest = json.load(f)
    got = {}
    for name, tensor in ringload.stream_tensors(path):
        assert name not in got, f"{name} handed over twice"
        got[name] = tensor
    want = {manifest_name(t): t for t in manifest["tensors"]}
    assert len(want) == len(manifest["tensors"])
    assert sorted(got) == sorted(want)
    for name, tensor in want.items():
        assert str(got[name].dtype) == tensor["dtype"], name
        assert list(got[name].shape) == tensor["shape"], name
        assert hashlib.sha256(raw(got[name])).hexdigest() == tensor["sha256"], name


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
    expected = peer_read("tensorizer", files["tensorizer"])
    lazy = ringload.TensorDeserializer(files["tensorizer"], device="cpu", lazy_load=True)
    first = lazy["ids"]  # loaded before: comes from the cache
    rows = list(lazy.read_tensors())
    assert sorted(name for _, _, name, _ in rows) == sorted(expected)
    for module_idx, tensor_type, name, tensor in rows:
        assert tensor.dtype == expected[name].dtype and raw(tensor) == raw(expected[name]), name
    assert dict((name, t) for _, _, name, t in rows)["ids"] is first
    assert lazy["embed"] is dict((name, t) for _, _, name, t in rows)["embed"]  # cached as they land
    eager = ringload.TensorDeserializer(files["tensorizer"], device="cpu")
    # num_tensors: the first ones in the file's order (the real tensorizer's keys are in it).
    assert [name for _, _, name, _ in eager.read_tensors(num_tensors=3)] == list(expected)[:3]


class GatedProxy(FaultProxy):
    """tests/support's fault proxy (every connection "pass") that counts what goes through it
    (`requests`: the HTTP requests it forwarded; `served`: the response bytes it handed to the
    client; `connections`: those opened) and can hold responses back: hold_after(n) lets n more
    response bytes through, over all connections, and holds every byte after them until
    release(). A held connection keeps its client waiting with the rest of its response unsent."""

    def __init__(self, upstream_port):
        super().__init__(upstream_port)
        self.requests = 0
        self.served = 0
        self._budget = None  # the `served` count to hold at; None: nothing held
        self._gate = None  # an asyncio.Event on the proxy's loop, set when released

    def _on_loop(self, function):
        async def call():
            function()
        asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout=10)

    def hold_after(self, budget):
        def arm():
            if self._gate is not None:
                self._gate.set()
            self._gate = asyncio.Event()
            self._budget = self.served + budget
        self._on_loop(arm)

    def release(self):
        def open_gate():
            self._budget = None
            if self._gate is not None:
                self._gate.set()
        self._on_loop(open_gate)

    @property
    def holding(self):
        return self._budget is not None

    async def handle(self, reader, writer):
        await super().handle(_CountedRequests(reader, self), _GatedResponses(writer, self))


class _CountedRequests:
    """The client's side of a proxied connection, counting the requests read from it."""

    def __init__(self, reader, proxy):
        self._reader, self._proxy = reader, proxy

    async def read(self, size=-1):
        data = await self._reader.read(size)
        self._proxy.requests += data.count(b"GET ")
        return data

    def __getattr__(self, name):
        return getattr(self._reader, name)


class _GatedResponses:
    """The writer to the client: what is over the proxy's budget waits in drain() for release()."""

    def __init__(self, writer, proxy):
        self._writer, self._proxy, self._held = writer, proxy, b""

    def write(self, data):
        proxy = self._proxy
        allowed = len(data) if proxy._budget is None else max(0, min(len(data), proxy._budget - proxy.served))
        if allowed:
            self._writer.write(data[:allowed])
            proxy.served += allowed
        self._held += data[allowed:]

    async def drain(self):
        while self._held:
            await self._proxy._gate.wait()
            data, self._held = self._held, b""
            self.write(data)
        await self._writer.drain()

    def __getattr__(self, name):
        return getattr(self._writer, name)


@contextlib.contextmanager
def released_after(proxy, seconds):
    """Against a hang only: releases what the proxy holds after `seconds` (the guard's `fired`
    then says so, and the test fails on it). The timer is joined on exit: no thread left."""
    guard = types.SimpleNamespace(fired=False)

    def fire():
        guard.fired = True
        proxy.release()

    timer = threading.Timer(seconds, fire)
    timer.start()
    try:
        yield guard
    finally:
        timer.cancel()
        timer.join()


def quiet(proxy, still=0.5, at_most=10):
    """Returns once the proxy has seen no new connection or request and forwarded no byte for
    `still` seconds (at most `at_most`): whatever a load still had under way has gone through."""
    deadline = time.monotonic() + at_most
    last = None
    while time.monotonic() < deadline:
        now = (proxy.connections, proxy.requests, proxy.served)
        if now == last:
            return
        last = now
        time.sleep(still)


@pytest.fixture(scope="module")
def held_file():
    """A safetensors file from a real nginx through a GatedProxy: (proxy, url, the tensors as
    PyPI safetensors reads the file, the file's size). nginx that does not start is an error."""
    tensors = state(count=48, rows=64)  # 48 tensors of 256 KiB: 12 MiB
    # Not under pytest's tmp_path, whose parent only its owner may enter: nginx's workers may
    # run as another user.
    root = tempfile.mkdtemp(prefix="ringload-stream-")
    try:
        os.chmod(root, 0o755)
        path = os.path.join(root, "m.safetensors")
        safetensors_torch.save_file(tensors, path)
        os.chmod(path, 0o644)
        expected = safetensors_torch.load_file(path)
        with Nginx(root) as server, GatedProxy(server.http_port) as proxy:
            yield proxy, proxy.url + "/m.safetensors", expected, os.path.getsize(path)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_over_http_the_first_tensor_is_handed_over_before_the_rest_arrives(held_file):
    """A quarter of the file gets through, the rest is held until the first tensor is out: the
    stream must hand it over (usable, equal to the file's) without the bytes still held."""
    proxy, url, expected, size = held_file
    budget = size // 4
    proxy.hold_after(budget)
    with released_after(proxy, HANG_GUARD) as guard:
        stream = ringload.stream_tensors(url, slot_size=256 << 10, connections=2, http_version="1.1")
        name, first = next(stream)
        held_then, served_then, requests_then = proxy.holding, proxy.served, proxy.requests
        assert first.dtype == expected[name].dtype and raw(first) == raw(expected[name]), name  # usable as it lands
        proxy.release()
        got = {name: first}
        for name, tensor in stream:
            assert name not in got, f"{name} handed over twice"
            got[name] = tensor
    print(f"first tensor with {served_then} of {size} bytes served ({requests_then} requests)")
    assert not guard.fired and held_then, "the first tensor came only once the held bytes were released"
    assert served_then <= budget < size
    assert_same(got, expected)
    assert proxy.served >= served_then + (size - budget) // 2, "the rest of the file never came through the proxy"


def test_leaving_a_stream_half_way_cancels_the_load(held_file):
    """Each way of leaving a stream returns while the proxy still holds most of the file back
    (a cancel waits for nothing the server has not sent), and once released, the left load
    makes no request and opens no connection: it stopped."""
    proxy, url, expected, size = held_file
    before = thread_count()
    # A small ring of short ranges: the load has reads in flight at the gate when it is left.
    options = dict(slot_size=256 << 10, ring_bytes=1 << 20, range_size=256 << 10, connections=2,
                   http_version="1.1")

    def close_half_way():
        stream = ringload.stream_tensors(url, **options)
        for k, _ in enumerate(stream):
            if k == 3:
                break
        stream.close()

    def raise_in_the_consumer():
        with pytest.raises(KeyError):
            for name, tensor in ringload.stream_tensors(url, **options):
                raise KeyError(name)

    def drop_without_closing():
        stream = ringload.stream_tensors(url, **options)
        next(stream)
        del stream
        gc.collect()

    for leave in (close_half_way, raise_in_the_consumer, drop_without_closing):
        proxy.hold_after(size // 4)
        with released_after(proxy, HANG_GUARD) as guard:
            leave()
            held = proxy.holding
            # A request the load wrote before it was left may reach the proxy's count a moment
            # later (CI saw 61 for 60): count once that has settled, the responses still held,
            # so that nothing the load does after its bytes come can be in it.
            quiet(proxy)
            held = held and proxy.holding
        assert not guard.fired and held, f"{leave.__name__}: leaving waited for the bytes the server held back"
        after_leaving = (proxy.connections, proxy.requests)
        proxy.release()
        quiet(proxy)
        assert (proxy.connections, proxy.requests) == after_leaving, \
            f"{leave.__name__}: the load went on asking for the file after it was left"
    assert thread_count() <= before, "a load thread outlived its stream"
    # the file loads again, whole
    assert_same(dict(ringload.stream_tensors(url, **options)), expected)


def test_leaving_a_local_stream_half_way_then_loading_again(files):
    expected = peer_read("safetensors", files["safetensors"])
    for _ in range(5):
        stream = ringload.stream_tensors(files["safetensors"], slot_size=64 << 10, ring_bytes=256 << 10)
        name, tensor = next(stream)
        assert raw(tensor) == raw(expected[name]), name
        stream.close()
    assert_same(dict(ringload.stream_tensors(files["safetensors"])), expected)


# ringload.stream_folder: the engine's model-level call streamed (ringload/model_load.hpp's
# load_model with ModelLoadOptions::on_tensor): a model's files read side by side, each tensor
# handed over as it lands.
@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """A folder of three safetensors shards and its index, and what PyPI safetensors reads."""
    root = tmp_path_factory.mktemp("model")
    everything, weight_map = {}, {}
    for k in range(3):
        part = {f"layers.{k}.{i}.weight": t for i, t in enumerate(state(count=6, seed=k).values())}
        name = f"model-{k + 1:05d}-of-00003.safetensors"
        safetensors_torch.save_file(part, str(root / name))
        everything.update(part)
        weight_map.update({tensor: name for tensor in part})
    (root / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return root, everything


def test_a_streamed_folder_hands_over_every_tensor_of_every_shard_once(shards):
    root, expected = shards
    got = {}
    for name, tensor in ringload.stream_folder(root):
        assert name not in got, f"{name} handed over twice"
        got[name] = tensor
    assert_same(got, expected)
    assert_same(ringload.load_folder(root), expected)  # the same call, whole
    # The files one by one (a server loader's uri list), with a dtype on the way.
    files = sorted(str(path) for path in root.glob("*.safetensors"))
    halves = dict(ringload.stream_folder(files, dtype=torch.float16))
    assert_same(halves, {n: t.half() if t.is_floating_point() else t for n, t in expected.items()})


def test_a_streamed_folder_left_half_way_cancels_every_file(shards):
    root, expected = shards
    before = thread_count()
    for _ in range(5):
        stream = ringload.stream_folder(root, slot_size=64 << 10, ring_bytes=256 << 10)
        name, tensor = next(stream)
        assert raw(tensor) == raw(expected[name]), name
        stream.close()
    assert thread_count() <= before, "a load thread outlived its stream"
    assert_same(dict(ringload.stream_folder(root)), expected)


def test_a_streamed_model_waits_for_its_consumer(shards):
    """The tensors handed over but not taken are bounded (held_bytes, 1 GiB by default): the
    loads wait for a slow consumer rather than holding the whole model (files read side by side
    each keep their memory, on a GPU their device block, until their tensors are dropped). With
    a bound of one byte the tensors go one at a time: every one still comes, once; and a stream
    closed while its loads wait for room ends them, leaving no thread."""
    from ringload import _ringload
    from ringload.ground.file_reads import Entry
    from ringload.ground.tensors import to_torch
    root, expected = shards
    stream, got = _ringload.stream_model(str(root), held_bytes=1), {}
    try:
        while (item := stream.next()) is not None:
            _, row, streamed = item
            entry = Entry.from_tuple(row)
            assert entry.name not in got, f"{entry.name} handed over twice"
            got[entry.name] = to_torch(streamed, 0, entry.dtype, entry.shape)
            time.sleep(0.002)  # a slow consumer
    finally:
        stream.close()
    assert_same(got, expected)
    before = thread_count()
    for _ in range(3):
        stream = _ringload.stream_model(str(root), held_bytes=1)
        assert stream.next() is not None
        time.sleep(0.05)  # the loads now wait for room
        stream.close()
    assert thread_count() <= before, "a load thread outlived its stream"


def test_a_streamed_model_names_what_is_wrong(shards, tmp_path):
    root, _ = shards
    missing = str(tmp_path / "nothing.safetensors")
    with pytest.raises(ringload.SourceNotFoundError, match="nothing.safetensors"):
        dict(ringload.stream_folder([str(next(root.glob("*.safetensors"))), missing]))
    with pytest.raises(ValueError, match="option threads must be"):
        ringload.stream_folder(root, threads="many")
    # A signed list's bundle is read before any file is (model_signing_test checks signed lists).
    with pytest.raises(ringload.SourceNotFoundError, match="m.sig: cannot read the signature"):
        dict(ringload.stream_folder([missing], signature=str(tmp_path / "m.sig"), public_key=missing))
    with pytest.raises(ValueError, match="https://example.invalid/a.safetensors: signatures are verified for local"):
        dict(ringload.stream_folder(["https://example.invalid/a.safetensors"], signature=str(tmp_path / "m.sig"),
                                    public_key=missing))


def test_an_encrypted_model_streams_with_its_key(tmp_path):
    tensors = state(count=12)
    params = ringload.EncryptionParams.random()
    for k, half in enumerate((dict(list(tensors.items())[:7]), dict(list(tensors.items())[7:]))):
        with ringload.TensorSerializer(str(tmp_path / f"part-{k}.tensors"), encryption=params) as writer:
            writer.write_state_dict(half)
    key = ringload.DecryptionParams.from_key(params.key)
    assert_same(dict(ringload.stream_folder(tmp_path, encryption=key, verify_hash=True)), tensors)
    with pytest.raises(ringload.DecryptionError):
        dict(ringload.stream_folder(tmp_path))
