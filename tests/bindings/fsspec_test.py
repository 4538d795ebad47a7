"""tests/bindings/fsspec_test.py: any fsspec URL as ringload's slower path (issue #39).

Where no registered source takes a URI and fsspec knows its scheme, the package reads it
through the file system's cat_file, one range at a time, with the engine's stages after it
(ringload.ground.opening.fsspec_reader, Deserializer(reader=...)). fsspec's own in-memory file system
(memory://) holds the files here: every tensorizer fixture (its manifest's sha256 per tensor,
hashes verified), a safetensors file (against safetensors' own load), slices and the streamed
hand-over; a file system that fails mid-read, or returns short, fails the load naming the URL;
a scheme neither the engine nor fsspec knows is refused naming the forms ringload reads.

Run by ctest (test `fsspec_torch2`, .venv-vllm: it has fsspec) with PYTHONPATH at
<build>/bindings/python and RINGLOAD_TEST_DATA at tests/data.
"""
import glob
import hashlib
import json
import os

import fsspec
import pytest
import safetensors.torch as safetensors_torch
import torch
from fsspec.implementations.memory import MemoryFileSystem

import ringload
from ringload import errors

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))


def put(name: str, data: bytes) -> str:
    uri = f"memory://ringload-fsspec/{name}"
    with fsspec.open(uri, "wb") as file:
        file.write(data)
    return uri


def manifests():
    for path in sorted(glob.glob(os.path.join(DATA, "tensorizer", "*.tensors.json"))):
        with open(path) as file:
            manifest = json.load(file)
        if manifest.get("encryption") is None and manifest.get("expect_error") is None:
            yield pytest.param(manifest, id=manifest["fixture_id"])


@pytest.mark.parametrize("manifest", manifests())
def test_every_plain_tensorizer_fixture_through_fsspec(manifest):
    with open(os.path.join(DATA, "tensorizer", manifest["file"]), "rb") as file:
        uri = put(manifest["file"], file.read())
    with ringload.TensorDeserializer(uri, device="cpu", verify_hash=True) as deserializer:
        got = {name: deserializer[name] for name in deserializer.keys()}
    for tensor in manifest["tensors"]:
        if tensor.get("is_meta") or tensor["name"] not in got:
            continue
        loaded = got[tensor["name"]].contiguous().reshape(-1)
        digest = hashlib.sha256(loaded.view(torch.uint8).numpy().tobytes() if loaded.numel() else b"").hexdigest()
        assert digest == tensor["sha256"], tensor["name"]


def test_safetensors_load_file_safe_open_slices_and_stream():
    tensors = {"a": torch.arange(48.0).reshape(6, 8), "b": torch.ones(5, dtype=torch.int32),
               "c": torch.randn(3, 4).to(torch.bfloat16)}
    data = safetensors_torch.save(tensors)
    uri = put("model.safetensors", data)
    expected = safetensors_torch.load(data)
    got = ringload.load_file(uri)
    assert set(got) == set(expected) and all(torch.equal(got[k], expected[k]) for k in expected)
    with ringload.safe_open(uri, framework="pt") as file:
        assert torch.equal(file.get_slice("a")[2:4, 1:3], expected["a"][2:4, 1:3])
        assert torch.equal(file.get_tensor("c"), expected["c"])
    streamed = {name: tensor.clone() for name, tensor in ringload.stream_tensors(uri)}
    assert set(streamed) == set(expected) and all(torch.equal(streamed[k], expected[k]) for k in expected)


class FailingFileSystem(MemoryFileSystem):
    """A memory file system whose reads past `fail_after` bytes fail (or come back short)."""
    protocol = "ringloadfailing"
    fail_after = 1 << 62
    short = False

    def cat_file(self, path, start=None, end=None, **kwargs):
        if end is not None and end > self.fail_after:
            if self.short:
                return b""
            raise OSError("the object store went away")
        return super().cat_file(path, start=start, end=end, **kwargs)


fsspec.register_implementation("ringloadfailing", FailingFileSystem, clobber=True)


@pytest.mark.parametrize("short", [False, True], ids=["raises", "short"])
def test_a_failing_file_system_fails_the_load_naming_the_url(short):
    tensors = {f"t{i}": torch.full((256, 256), float(i)) for i in range(8)}
    data = safetensors_torch.save(tensors)
    fs = fsspec.filesystem("ringloadfailing")
    fs.pipe("ringloadfailing://bucket/model.safetensors", data)
    FailingFileSystem.fail_after, FailingFileSystem.short = len(data) // 2, short
    try:
        with pytest.raises(errors.RingloadError) as failure:
            ringload.load_file("ringloadfailing://bucket/model.safetensors")
    finally:
        FailingFileSystem.fail_after, FailingFileSystem.short = 1 << 62, False
    text = str(failure.value)
    assert "ringloadfailing://bucket/model.safetensors" in text
    assert ("went away" in text) if not short else ("returned 0 bytes" in text)


def test_a_scheme_nobody_reads_is_refused_naming_the_forms():
    with pytest.raises(errors.RingloadError, match=r"no source reads nosuchscheme:// URIs.*s3://BUCKET/KEY.*gs://"):
        ringload.load_file("nosuchscheme://bucket/model.safetensors")


def test_the_summary_says_fsspec():
    uri = put("small.safetensors", safetensors_torch.save({"x": torch.zeros(4)}))
    with ringload.TensorDeserializer(uri, device="cpu") as deserializer:
        assert deserializer["x"].sum() == 0
    assert "memory" in ringload.ground.opening.fsspec_reader(uri)[2].lower()
