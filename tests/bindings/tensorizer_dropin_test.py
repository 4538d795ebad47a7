"""tests/bindings/tensorizer_dropin_test.py: the parts of tensorizer's Python API that its own
test_serialization.py (tests/tensorizer_upstream) does not reach on a machine without a GPU
(issue #28, part 6):

- file objects without a path (io.BytesIO) to write to and read from; an open file given to the
  serializer is written through (its descriptor), not replaced by a new file at its name, and is
  closed afterwards, as tensorizer closes it;
- write_state_dict of a flat list (integer keys); verify_module;
- EncryptionParams.OpsLimit / MemLimit and from_string(..., salt=);
- tensorizer's own EncryptionParams (from a key) and DecryptionParams accepted;
- failures that are also tensorizer's CryptographyError / HashMismatchError once tensorizer is
  imported, and messages that name Python arguments, not the CLI's flags.

What ringload writes is read back by the real tensorizer (the .venv's, 2.11.1) too, and must
give the tensors written: a reader and writer of our own that agree on a mistake would pass a
round trip through ringload alone. verify_module's answers are the real tensorizer's.
"""
import io
import os
import sys

import pytest
import tensorizer
import tensorizer.serialization as serialization
import torch

import ringload
from ringload import DecryptionParams, EncryptionParams, TensorDeserializer, TensorSerializer


def tensors():
    generator = torch.Generator().manual_seed(28)
    return {"a": torch.randn(3, 5, generator=generator), "b": torch.arange(7, dtype=torch.int64)}


def assert_same(got, expected):
    assert set(got) == set(expected)
    for name, tensor in expected.items():
        assert got[name].dtype == tensor.dtype and torch.equal(got[name], tensor), name


def read_by_tensorizer(source, **options):
    """{name: tensor} as the real tensorizer's TensorDeserializer reads `source` (a path or bytes)."""
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    with tensorizer.TensorDeserializer(source, device="cpu", **options) as theirs:
        return {name: theirs[name].detach().clone() for name in theirs.keys()}


def test_bytesio_round_trip():
    buffer = io.BytesIO()
    closed = []
    buffer.close = lambda: closed.append(True)  # tensorizer's serializer closes what it is given
    serializer = TensorSerializer(buffer)
    serializer.write_state_dict(tensors())
    serializer.close()
    assert closed == [True]
    data = buffer.getvalue()
    assert data[:4] == b"|TZR"
    assert_same(read_by_tensorizer(data), tensors())
    with TensorDeserializer(io.BytesIO(data), device="cpu") as deserializer:
        assert_same(dict(deserializer), tensors())
    with TensorDeserializer(io.BytesIO(data), device="cpu", lazy_load=True) as deserializer:
        assert_same({name: tensor for _, _, name, tensor in deserializer.read_tensors()}, tensors())
    # The real tensorizer's bytes, from a file object, as ours are read.
    theirs = io.BytesIO()
    theirs.close = lambda: None
    writer = tensorizer.TensorSerializer(theirs)
    writer.write_state_dict(tensors())
    writer.close()
    with TensorDeserializer(io.BytesIO(theirs.getvalue()), device="cpu") as deserializer:
        assert_same(dict(deserializer), tensors())


def test_open_file_is_written_through(tmp_path):
    path = tmp_path / "model.tensors"
    with open(path, "wb+") as file:
        file.write(b"kept")
        os.unlink(path)  # only the open file is left: a writer that writes a new file at its name fails here
        kept = os.dup(file.fileno())  # to read it back after the serializer closed it
        serializer = TensorSerializer(file)
        serializer.write_state_dict(tensors())
        serializer.close()
        assert file.closed
    assert not path.exists()
    os.lseek(kept, 0, os.SEEK_SET)  # (the duplicate shares the closed file's offset, at its end)
    with os.fdopen(kept, "rb") as written:
        data = written.read()
    assert data[:8] == b"kept|TZR"  # written from the file's position on, as tensorizer writes
    assert_same(read_by_tensorizer(data[4:]), tensors())

    path2 = tmp_path / "model2.tensors"
    with open(path2, "wb", buffering=0) as file:
        inode = os.fstat(file.fileno()).st_ino
        serializer = TensorSerializer(file)
        serializer.write_state_dict(tensors())
        serializer.close()
    assert os.stat(path2).st_ino == inode
    assert_same(read_by_tensorizer(str(path2)), tensors())
    with open(path2, "rb") as file, TensorDeserializer(file, device="cpu") as deserializer:
        assert_same(dict(deserializer), tensors())


def test_flat_list():
    buffer = io.BytesIO()
    buffer.close = lambda: None
    serializer = TensorSerializer(buffer)
    values = [torch.tensor([i], dtype=torch.uint8) for i in range(4)]
    serializer.write_state_dict(values)
    serializer.close()
    # Keys, tree and values as the real tensorizer gives them for the same file.
    with tensorizer.TensorDeserializer(io.BytesIO(buffer.getvalue()), device="cpu") as theirs:
        their_keys = list(theirs.keys())
        their_tree = [tensor.detach().clone() for tensor in theirs.tree()]
        their_has_text_key = "0" in theirs
    assert their_keys == [0, 1, 2, 3] and not their_has_text_key
    assert all(torch.equal(a, b) for a, b in zip(their_tree, values)) and len(their_tree) == len(values)
    with TensorDeserializer(io.BytesIO(buffer.getvalue()), device="cpu") as deserializer:
        assert list(deserializer.keys()) == their_keys
        tree = deserializer.tree()
        assert len(tree) == len(their_tree)
        assert all(a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(tree, their_tree))
        assert ("0" in deserializer) == their_has_text_key


def answers(verified):
    """verify_module's (passed, [(name, matched), ...]) as plain tuples."""
    passed, results = verified
    return bool(passed), [(name, bool(matched)) for name, matched in results]


def test_verify_module(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    path = str(tmp_path / "m.tensors")
    serializer = TensorSerializer(path)
    serializer.write_module(model)
    serializer.close()
    assert_same(read_by_tensorizer(path), {name: tensor.detach() for name, tensor in model.state_dict().items()})
    # The real tensorizer's answers for the same file and model, before and after a change.
    with tensorizer.TensorDeserializer(path, device="cpu") as theirs, \
            TensorDeserializer(path, device="cpu", lazy_load=True) as deserializer:
        expected = theirs.verify_module(model)
        assert expected[0] and [name for name, _ in expected[1]] == ["0.weight", "0.bias", "1.weight", "1.bias"]
        assert answers(deserializer.verify_module(model)) == answers(expected)
        with torch.no_grad():
            model[1].weight.add_(1)
        expected = theirs.verify_module(model)
        assert not expected[0] and dict(expected[1])["1.weight"] is False
        assert answers(deserializer.verify_module(model)) == answers(expected)


def test_passphrase_with_salt_and_cost(tmp_path):
    assert int(EncryptionParams.OpsLimit.MIN) == 1 and int(EncryptionParams.MemLimit.MIN) == 8192
    assert EncryptionParams.OpsLimit.MODERATE < EncryptionParams.OpsLimit.SENSITIVE
    path = str(tmp_path / "sealed.tensors")
    encryption = EncryptionParams.from_string("test", opslimit=EncryptionParams.OpsLimit.MIN,
                                              memlimit=EncryptionParams.MemLimit.MIN, salt=bytes(16))
    serializer = TensorSerializer(path, encryption=encryption)
    serializer.write_state_dict(tensors())
    serializer.close()
    with open(path, "rb") as file:
        assert bytes(16) in file.read()  # the salt as given, recorded with the cost
    # The real tensorizer finds the salt and cost in the file and decrypts with the passphrase.
    assert_same(read_by_tensorizer(path, encryption=serialization.DecryptionParams.from_string("test")), tensors())
    with TensorDeserializer(path, device="cpu", encryption=DecryptionParams.from_string("test")) as deserializer:
        assert_same(dict(deserializer), tensors())
    with pytest.raises(ValueError, match="16 bytes"):
        EncryptionParams.from_string("test", salt=b"short")


def test_errors_name_python_arguments(tmp_path):
    path = str(tmp_path / "sealed.tensors")
    serializer = TensorSerializer(path, encryption=EncryptionParams.random())
    serializer.write_state_dict(tensors())
    serializer.close()
    with pytest.raises(ringload.DecryptionError) as raised:
        TensorDeserializer(path, device="cpu")
    assert "--" not in str(raised.value) and "encryption=" in str(raised.value)


def test_tensorizers_classes(tmp_path):
    encryption = serialization.EncryptionParams.random()
    path = str(tmp_path / "sealed.tensors")
    serializer = TensorSerializer(path, encryption=encryption)
    serializer.write_state_dict(tensors())
    serializer.close()
    decryption = serialization.DecryptionParams.from_key(encryption.key)
    assert_same(read_by_tensorizer(path, encryption=decryption), tensors())
    with TensorDeserializer(path, device="cpu", encryption=decryption) as deserializer:
        assert_same(dict(deserializer), tensors())
    with pytest.raises(serialization.CryptographyError) as raised:
        TensorDeserializer(path, device="cpu", encryption=serialization.DecryptionParams.from_key(bytes(32)))
    assert isinstance(raised.value, ringload.DecryptionError)
    assert isinstance(ringload.HashMismatchError("x"), serialization.HashMismatchError)
    with pytest.raises(TypeError, match="ringload.EncryptionParams.from_string"):
        TensorSerializer(path, encryption=serialization.EncryptionParams.from_string("x", opslimit=1, memlimit=8192))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
