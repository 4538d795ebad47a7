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
"""
import io
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import ringload  # noqa: E402
from ringload import DecryptionParams, EncryptionParams, TensorDeserializer, TensorSerializer  # noqa: E402


def tensors():
    generator = torch.Generator().manual_seed(28)
    return {"a": torch.randn(3, 5, generator=generator), "b": torch.arange(7, dtype=torch.int64)}


def assert_same(got, expected):
    assert set(got) == set(expected)
    for name, tensor in expected.items():
        assert torch.equal(got[name], tensor), name


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
    with TensorDeserializer(io.BytesIO(data), device="cpu") as deserializer:
        assert_same(dict(deserializer), tensors())
    with TensorDeserializer(io.BytesIO(data), device="cpu", lazy_load=True) as deserializer:
        assert_same({name: tensor for _, _, name, tensor in deserializer.read_tensors()}, tensors())


def test_open_file_is_written_through(tmp_path):
    path = tmp_path / "model.tensors"
    with open(path, "wb+") as file:
        file.write(b"kept")
        os.unlink(path)  # only the open file is left: a writer that writes a new file at its name fails here
        serializer = TensorSerializer(file)
        serializer.write_state_dict(tensors())
        serializer.close()
        assert file.closed
    assert not path.exists()

    path2 = tmp_path / "model2.tensors"
    with open(path2, "wb", buffering=0) as file:
        inode = os.fstat(file.fileno()).st_ino
        serializer = TensorSerializer(file)
        serializer.write_state_dict(tensors())
        serializer.close()
    assert os.stat(path2).st_ino == inode
    with open(path2, "rb") as file, TensorDeserializer(file, device="cpu") as deserializer:
        assert_same(dict(deserializer), tensors())


def test_flat_list():
    buffer = io.BytesIO()
    buffer.close = lambda: None
    serializer = TensorSerializer(buffer)
    values = [torch.tensor([i], dtype=torch.uint8) for i in range(4)]
    serializer.write_state_dict(values)
    serializer.close()
    with TensorDeserializer(io.BytesIO(buffer.getvalue()), device="cpu") as deserializer:
        assert list(deserializer.keys()) == [0, 1, 2, 3]
        assert deserializer.tree() == values
        assert "0" not in deserializer


def test_verify_module(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    path = str(tmp_path / "m.tensors")
    serializer = TensorSerializer(path)
    serializer.write_module(model)
    serializer.close()
    with TensorDeserializer(path, device="cpu", lazy_load=True) as deserializer:
        passed, results = deserializer.verify_module(model)
        assert passed and [name for name, _ in results] == ["0.weight", "0.bias", "1.weight", "1.bias"]
        with torch.no_grad():
            model[1].weight.add_(1)
        passed, results = deserializer.verify_module(model)
        assert not passed and dict(results) == {"0.weight": True, "0.bias": True, "1.weight": False,
                                                "1.bias": True}


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
    serialization = pytest.importorskip("tensorizer.serialization")
    encryption = serialization.EncryptionParams.random()
    path = str(tmp_path / "sealed.tensors")
    serializer = TensorSerializer(path, encryption=encryption)
    serializer.write_state_dict(tensors())
    serializer.close()
    decryption = serialization.DecryptionParams.from_key(encryption.key)
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
