"""tests/bindings/transformers_test.py: Hugging Face transformers' from_pretrained with ringload
doing the reads (ringload.transformers_reads.reading()), with the real transformers on the CPU.

A tiny Llama (tests/support/tiny_llama.py: fp32, one model.safetensors) is loaded by
transformers alone and inside reading(): every parameter and buffer must be equal, greedy
generate() tokens equal, and ringload must have done the reads (its Reads counts every tensor
and every byte of the file; safetensors' safe_open is never called), with each placement; the
parameters must stay valid after the file is closed; safetensors' safe_open must be back in
place after the `with`, also when from_pretrained raises; dtype="auto" (which opens the file
for its dtypes first), a bfloat16 load (transformers converts) and a file with two shards.

    PYTHONPATH=<build>/bindings/python:tests/support python -m pytest -q tests/bindings/transformers_test.py

Needs torch, transformers (5.x) and tokenizers (the .venv-vllm has them); skipped without.
"""
import gc
import os
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
safetensors = pytest.importorskip("safetensors")

import ringload.transformers_reads as transformers_reads  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from tiny_llama import make_tiny_llama  # noqa: E402

from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
import transformers.modeling_utils as modeling_utils  # noqa: E402

PROMPT = "The quick brown fox"
NEW_TOKENS = 12


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tiny_llama"))
    make_tiny_llama(path)
    return path


@pytest.fixture(scope="module")
def sharded_folder(tmp_path_factory, folder):
    """The same model saved as two safetensors shards with their index json."""
    path = str(tmp_path_factory.mktemp("tiny_llama_sharded"))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.save_pretrained(path, max_shard_size="400KB")
    AutoTokenizer.from_pretrained(folder).save_pretrained(path)
    assert len([f for f in os.listdir(path) if f.endswith(".safetensors")]) >= 2
    return path


@pytest.fixture(scope="module")
def reference(folder):
    """transformers' own load (safetensors' mmap reads)."""
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return model, greedy(model, folder)


def greedy(model, folder):
    tokenizer = AutoTokenizer.from_pretrained(folder)
    inputs = tokenizer(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tokenizer.eos_token_id)
    return out[0].tolist()


def assert_same_weights(model, expected):
    got = dict(model.state_dict())
    want = dict(expected.state_dict())
    assert sorted(got) == sorted(want)
    for name, tensor in want.items():
        assert got[name].dtype == tensor.dtype, name
        assert torch.equal(got[name], tensor), name


def file_bytes(folder):
    """Bytes of tensor data in the folder's safetensors files."""
    total = 0
    for name in os.listdir(folder):
        if name.endswith(".safetensors"):
            with safetensors.safe_open(os.path.join(folder, name), framework="pt") as f:
                for key in f.keys():
                    total += f.get_tensor(key).numel() * f.get_tensor(key).element_size()
    return total


def count_safetensors_opens(monkeypatch):
    """Replaces safetensors' safe_open, where transformers imports it, by a counting one."""
    opened = []
    original = modeling_utils.safe_open

    def counting(*args, **kwargs):
        opened.append(args[0] if args else kwargs.get("filename"))
        return original(*args, **kwargs)

    monkeypatch.setattr(modeling_utils, "safe_open", counting)
    return opened


@pytest.mark.parametrize("placement,prefetch", [("auto", True), ("auto", False), ("mapped", True), ("arena", True)])
def test_same_weights_and_tokens(folder, reference, monkeypatch, placement, prefetch):
    expected, tokens = reference
    safetensors_opens = count_safetensors_opens(monkeypatch)
    with transformers_reads.reading(placement=placement, prefetch=prefetch) as reads:
        assert modeling_utils.safe_open.__name__ == "opener"
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert safetensors_opens == []
    assert modeling_utils.safe_open.__name__ == "counting"  # put back
    tensors = len(expected.state_dict())
    assert reads.files == 1
    assert reads.tensors == tensors
    assert reads.bytes == file_bytes(folder)
    assert reads.placements == (["arena"] if placement == "arena" else ["mapped"])
    gc.collect()  # the file is closed, the engine's load dropped: the parameters must hold
    assert_same_weights(model, expected)
    assert greedy(model, folder) == tokens


def test_dtype_auto_and_bfloat16(folder, reference):
    expected, _ = reference
    with transformers_reads.reading() as reads:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto")
    assert reads.tensors == len(expected.state_dict())
    assert reads.files == 1  # the dtype look-up's open and the load share one ringload file
    assert_same_weights(model, expected)
    with transformers_reads.reading() as reads:
        half = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    assert reads.tensors == len(expected.state_dict())
    want = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    assert_same_weights(half, want)


def test_two_loads_do_not_share_memory(folder, reference):
    expected, _ = reference
    with transformers_reads.reading() as reads:
        first = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        second = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert reads.files == 2
    with torch.no_grad():
        first.lm_head.weight.add_(1.0)  # copy-on-write: neither the file nor the other model changes
    assert_same_weights(second, expected)
    with transformers_reads.reading():
        third = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert_same_weights(third, expected)


def test_sharded(sharded_folder, reference):
    expected, tokens = reference
    with transformers_reads.reading() as reads:
        model = AutoModelForCausalLM.from_pretrained(sharded_folder, dtype=torch.float32)
    shards = len([f for f in os.listdir(sharded_folder) if f.endswith(".safetensors")])
    assert reads.files == shards
    assert reads.tensors == len(expected.state_dict())
    assert reads.bytes == file_bytes(sharded_folder)
    assert_same_weights(model, expected)
    assert greedy(model, sharded_folder) == tokens


def test_put_back_after_an_error(tmp_path):
    original = modeling_utils.safe_open
    resolve = modeling_utils._get_resolved_checkpoint_files
    with pytest.raises(OSError):
        with transformers_reads.reading():
            AutoModelForCausalLM.from_pretrained(str(tmp_path / "missing"), local_files_only=True)
    assert modeling_utils.safe_open is original
    assert modeling_utils._get_resolved_checkpoint_files is resolve


def test_safe_open_surface(folder):
    """What the opener gives transformers, against safetensors' safe_open."""
    path = os.path.join(folder, "model.safetensors")
    with transformers_reads.reading() as reads:
        with modeling_utils.safe_open(path, framework="pt", device="cpu", backend="mmap") as ours, \
                safetensors.safe_open(path, framework="pt", device="cpu") as theirs:
            assert ours.keys() == theirs.keys()
            assert ours.metadata() == theirs.metadata()
            for key in theirs.keys():
                mine, want = ours.get_slice(key), theirs.get_slice(key)
                assert mine.get_shape() == want.get_shape() and mine.get_dtype() == want.get_dtype()
                assert torch.equal(mine[...], want[...])
                assert torch.equal(mine[:1], want[:1])
                assert torch.equal(ours.get_tensor(key), theirs.get_tensor(key))
            with pytest.raises(ringload_errors().SafetensorError):
                ours.get_tensor("no.such.tensor")
    assert reads.files == 1 and reads.placements == ["mapped"]
    with pytest.raises(ValueError):
        with transformers_reads.reading(placement="nowhere"):
            pass


def ringload_errors():
    import ringload.errors
    return ringload.errors
