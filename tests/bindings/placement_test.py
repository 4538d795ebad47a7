"""One rule for placement "auto" and for what can stay in a file's pages (ringload/placement.hpp):
the engine's choose_placement and why_not_mappable against what a demanding user expects
(a cached local safetensors file on the CPU is left in its pages; a cold one, a tensorizer
file, a remote URL, a GPU load, verification or a signature are not), and the front ends that
decide it (transformers' and diffusers' reads, the loads into parameters) giving the engine's
answer for the same file, and a mapped load refused in the engine's words. Run by pytest from
the .venv, PYTHONPATH=<build>/bindings/python.
"""
import os

import pytest
import torch

import ringload
from ringload import _ringload, diffusers_reads, transformers_reads
from ringload.ground.opening import auto_placement, why_not_mappable
from ringload.params import load as parameter_load


def _cached(path: str) -> str:
    with open(path, "rb") as file:
        file.read()
    assert _ringload.mostly_in_page_cache(path)
    return path


def _cold(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    if _ringload.mostly_in_page_cache(path):
        pytest.fail(f"the page cache kept {path} after POSIX_FADV_DONTNEED: the cold case cannot be made here")
    return path


@pytest.fixture
def checkpoint(tmp_path):
    path = str(tmp_path / "model.safetensors")
    ringload.save_file({"w": torch.arange(64, dtype=torch.float32).reshape(8, 8), "b": torch.ones(8)}, path)
    return path


def test_a_cached_local_safetensors_file_on_the_cpu_stays_in_its_pages(checkpoint):
    path = _cached(checkpoint)
    assert _ringload.choose_placement("auto", path) == "mapped"
    assert why_not_mappable(path, "cpu", {}) is None
    for asked in ("arena", "mapped"):
        assert _ringload.choose_placement(asked, path) == asked  # what was asked stands


@pytest.mark.parametrize("case, expected_words", [
    ({"device": "cuda:0"}, "not the CPU"),
    ({"verify": True}, "verify_hashes reads every byte"),
    ({"signed": True}, "a signed file's tensors"),
    ({"encrypted": True}, "encrypted"),
])
def test_what_cannot_stay_in_its_pages_says_why_and_auto_reads_it(checkpoint, case, expected_words):
    path = _cached(checkpoint)
    assert expected_words in _ringload.why_not_mappable(path, **case)
    assert _ringload.choose_placement("auto", path, **case) == "auto"


def test_other_formats_and_remote_sources_are_not_mapped(tmp_path, checkpoint):
    tensors = str(tmp_path / "model.tensors")
    with ringload.TensorSerializer(tensors) as serializer:
        serializer.write_state_dict({"w": torch.ones(4)})
    _cached(tensors)
    assert "only safetensors files are mapped, this is a tensorizer file" in _ringload.why_not_mappable(tensors)
    assert _ringload.choose_placement("auto", tensors) == "auto"
    assert "not a local file" in _ringload.why_not_mappable("http://127.0.0.1:1/model.safetensors")
    assert _ringload.choose_placement("auto", "s3://bucket/model.safetensors") == "auto"


def test_a_cold_file_is_read_through_the_ring(checkpoint):
    path = _cold(checkpoint)
    assert _ringload.choose_placement("auto", path) == "auto"


def test_into_parameters_maps_only_on_one_cpu_or_less(checkpoint):
    path = _cached(checkpoint)
    expected = "mapped" if _ringload.cpus_available() <= 1 else "auto"
    assert _ringload.choose_placement("auto", path, use="into_parameters") == expected
    assert 0 < _ringload.cpus_available() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("options", [{}, {"verify_hash": True}])
def test_transformers_diffusers_and_parameter_loads_give_the_engines_answer(checkpoint, options):
    path = _cached(checkpoint)
    engine = _ringload.choose_placement("auto", path, verify=bool(options.get("verify_hash")))
    assert engine == ("auto" if options else "mapped")
    opened = transformers_reads._Opened(transformers_reads.Reads(), path, "pt", "cpu", None, "auto", dict(options))
    try:
        assert opened.placement == engine
    finally:
        opened.close()
    assert diffusers_reads._placement_for(path, "cpu", "auto", dict(options)) == engine
    assert auto_placement(path, "cpu", "handed_over", options) == engine
    assert parameter_load._maps(path, dict(options), "cached") == (engine == "mapped")
    mapped_where_asked = parameter_load._maps(path, dict(options), True)
    assert mapped_where_asked == (why_not_mappable(path, "cpu", options) is None)


def test_a_mapped_load_is_refused_in_the_rules_words(checkpoint):
    path = _cached(checkpoint)
    why = _ringload.why_not_mappable(path, verify=True)
    with ringload.TensorDeserializer(path, device="cpu", placement="mapped", verify_hash=True, lazy_load=True) as d:
        with pytest.raises(ringload.RingloadError) as refused:
            d["w"]
    assert why in str(refused.value)
