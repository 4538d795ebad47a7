"""The vLLM loader's parts that need no vLLM (ringload.servers.weights, ringload.vllm_convert):
model_loader_extra_config checked (unknown options refused with the known ones listed, wrong
types named, key and passphrase files read), the weight files found in a model folder (shards
by their index json, training leftovers left out), and vllm_convert's one file from shards
read back equal. Run by pytest from the .venv (Debian's torch), PYTHONPATH=<build>/bindings/python.
"""
import json
import logging
import os
import subprocess
import sys

import pytest
import torch

import ringload
from ringload.servers import weights
from ringload import vllm_convert, vllm_loader


def test_no_options_read_the_model_folder():
    options = weights.parse_options(None)
    assert options.uris == [] and options.stream_kwargs == {}


def test_extra_config_must_be_a_dict():
    with pytest.raises(ValueError, match="must be a JSON object"):
        weights.parse_options('{"uri": "x"}')


def test_options_map_to_stream_tensors():
    options = weights.parse_options({"uri": "s3://b/k.tensors", "verify_hash": True, "connections": 8,
                                     "s3_endpoint": "http://127.0.0.1:9000", "timeout": 5.5, "threads": 0})
    assert options.uris == ["s3://b/k.tensors"]
    assert options.stream_kwargs == {"verify_hash": True, "connections": 8, "s3_endpoint": "http://127.0.0.1:9000",
                                     "timeout": 5.5, "threads": 0}


def test_a_list_of_uris_keeps_its_order():
    assert weights.parse_options({"uri": ["b.safetensors", "a.safetensors"]}).uris == ["b.safetensors", "a.safetensors"]


def test_unknown_options_are_refused_with_the_known_ones_listed():
    with pytest.raises(ValueError) as error:
        weights.parse_options({"connection": 8, "verify": True, "uri": "x"})
    message = str(error.value)
    assert "'connection', 'verify'" in message
    for known in weights.OPTIONS:
        assert known in message


@pytest.mark.parametrize("name, value", [("connections", 0), ("connections", "8"), ("verify_hash", 1),
                                         ("uri", []), ("uri", ""), ("http_version", "3"), ("timeout", True)])
def test_a_wrong_value_is_named(name, value):
    with pytest.raises(ValueError, match=f"option {name} must be"):
        weights.parse_options({name: value})


def test_key_file_becomes_decryption_params(tmp_path):
    key = tmp_path / "key"
    key.write_bytes(bytes(range(32)))
    params = weights.parse_options({"key_file": str(key)}).stream_kwargs["encryption"]
    assert isinstance(params, ringload.DecryptionParams) and params.key == bytes(range(32))


def test_a_missing_or_short_key_file_is_named(tmp_path):
    missing = str(tmp_path / "nokey")
    with pytest.raises(ValueError, match=f"{missing}: cannot open the key file"):
        weights.parse_options({"key_file": missing})
    short = tmp_path / "short"
    short.write_bytes(b"x" * 31)
    with pytest.raises(ValueError, match=f"{short}: a key file must hold exactly 32 raw bytes, this one holds 31"):
        weights.parse_options({"key_file": str(short)})


def test_passphrase_file_drops_one_trailing_newline(tmp_path):
    path = tmp_path / "pass"
    for written in (b"secret words\n", b"secret words\r\n", b"secret words"):
        path.write_bytes(written)
        params = weights.parse_options({"passphrase_file": str(path)}).stream_kwargs["encryption"]
        assert params._passphrase == "secret words"
    path.write_bytes(b"two\n\n")
    assert ringload.DecryptionParams.from_passphrase_file(str(path))._passphrase == "two\n"


def _key_file_refusals(tmp_path, key_file) -> dict:
    """What the CLI, Python, vLLM's extra config and vllm_convert say of one key file."""
    path = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.ones(3)}, str(path))
    said = {"cli": _cli_refusal(str(path), "--key-file", key_file)}
    with pytest.raises(ringload.RingloadError) as python:
        ringload.DecryptionParams.from_key_file(key_file)
    said["python"] = str(python.value)
    with pytest.raises(ringload.RingloadError) as writer:
        ringload.EncryptionParams.from_key_file(key_file)
    said["python writer"] = str(writer.value)
    with pytest.raises(ValueError) as server:
        weights.parse_options({"key_file": key_file})
    said["vllm"] = str(server.value)
    return said


@pytest.mark.parametrize("content, sentence", [(None, "{path}: cannot open the key file"),
                                               (b"x" * 31, "{path}: a key file must hold exactly 32 raw bytes, "
                                                           "this one holds 31"),
                                               (b"", "{path}: a key file must hold exactly 32 raw bytes, "
                                                     "this one holds 0")])
def test_a_bad_key_file_gets_the_same_words_from_the_cli_python_and_vllm(tmp_path, content, sentence):
    """One rule (ringload/crypto_params.hpp's read_key_file) reads a key file for every front end."""
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_bytes(content)
    expected = sentence.format(path=key_file)
    said = _key_file_refusals(tmp_path, str(key_file))
    assert all(expected in words for words in said.values()), said


def test_an_empty_passphrase_file_gets_the_same_words_from_the_cli_python_and_vllm(tmp_path):
    path = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.ones(3)}, str(path))
    passphrase = tmp_path / "pass"
    passphrase.write_bytes(b"\n")
    expected = f"{passphrase}: the passphrase file is empty"
    assert expected in _cli_refusal(str(path), "--passphrase-file", str(passphrase))
    with pytest.raises(ringload.ArgumentError, match=expected):
        ringload.DecryptionParams.from_passphrase_file(str(passphrase))
    with pytest.raises(ValueError, match=expected):
        weights.parse_options({"passphrase_file": str(passphrase)})


def test_key_and_passphrase_together_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        weights.parse_options({"key_file": "a", "passphrase_file": "b"})


def _touch(folder, *names):
    for name in names:
        (folder / name).write_bytes(b"")


def test_folder_layouts_in_vllms_order(tmp_path):
    _touch(tmp_path, "pytorch_model.bin", "training_args.bin", "model.tensors")
    assert weights.find_weight_files(str(tmp_path)) == [str(tmp_path / "model.tensors")]
    _touch(tmp_path, "model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors")
    assert weights.find_weight_files(str(tmp_path)) == [str(tmp_path / "model-00001-of-00002.safetensors"),
                                                        str(tmp_path / "model-00002-of-00002.safetensors")]


def test_training_leftovers_are_not_weights(tmp_path):
    _touch(tmp_path, "pytorch_model.bin", "training_args.bin", "optimizer.pt")
    assert weights.find_weight_files(str(tmp_path)) == [str(tmp_path / "pytorch_model.bin")]


def test_the_index_names_the_shards(tmp_path):
    _touch(tmp_path, "model-1.safetensors", "consolidated.safetensors")
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "model-1.safetensors"}}))
    assert weights.find_weight_files(str(tmp_path)) == [str(tmp_path / "model-1.safetensors")]
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"b": "model-2.safetensors"}}))
    with pytest.raises(ValueError, match="model-2.safetensors"):
        weights.find_weight_files(str(tmp_path))


def test_a_folder_without_weights_is_named(tmp_path):
    with pytest.raises(ValueError, match=f"no weights in {tmp_path}"):
        weights.find_weight_files(str(tmp_path))
    with pytest.raises(ValueError, match="not a local folder"):
        weights.find_weight_files("meta-llama/Llama-3-8B")


def test_the_command_and_vllm_find_the_same_weight_files(tmp_path):
    """One rule (ringload/model_load.hpp): `ringload load DIR` reads the files vLLM's loader reads,
    and fails on a folder without weights with the same sentence."""
    cli = os.environ["RINGLOAD_CLI"]
    tensors = {"a": torch.arange(6, dtype=torch.float32), "b": torch.ones(2, 3, dtype=torch.float16)}
    ringload.save_file({"a": tensors["a"]}, str(tmp_path / "model-00001-of-00002.safetensors"))
    ringload.save_file({"b": tensors["b"]}, str(tmp_path / "model-00002-of-00002.safetensors"))
    ringload.save_file(tensors, str(tmp_path / "consolidated.safetensors"))  # not in the index
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    torch.save(tensors, str(tmp_path / "pytorch_model.bin"))  # the same weights again, as .bin
    torch.save({"lr": 0.1}, str(tmp_path / "training_args.bin"))
    out = subprocess.run([cli, "load", str(tmp_path), "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    read = [file["path"] for file in json.loads(out.stdout)["files"]]
    assert read == weights.find_weight_files(str(tmp_path)) == [
        str(tmp_path / "model-00001-of-00002.safetensors"), str(tmp_path / "model-00002-of-00002.safetensors")]
    empty = tmp_path / "empty"
    empty.mkdir()
    out = subprocess.run([cli, "load", str(empty)], capture_output=True, text=True, timeout=120)
    with pytest.raises(ValueError) as raised:
        weights.find_weight_files(str(empty))
    sentence = f"no weights in {empty} (looked for *.safetensors, *.tensors, *.bin, *.pt)"
    assert out.returncode != 0 and sentence in out.stderr and sentence in str(raised.value), out.stderr


def test_the_command_and_python_load_the_same_model_with_one_call(tmp_path):
    """One model-level call (ringload/model_load.hpp's load_model): ringload.load_folder reads the
    files `ringload load DIR` reads, each tensor as written, and a folder without weights fails
    with the command's sentence."""
    cli = os.environ["RINGLOAD_CLI"]
    tensors = {"a": torch.arange(6, dtype=torch.float32), "b": torch.ones(2, 3, dtype=torch.float16)}
    ringload.save_file({"a": tensors["a"]}, str(tmp_path / "model-00001-of-00002.safetensors"))
    ringload.save_file({"b": tensors["b"]}, str(tmp_path / "model-00002-of-00002.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    torch.save({"c": torch.zeros(1)}, str(tmp_path / "pytorch_model.bin"))  # a later layout: not read
    out = subprocess.run([cli, "load", str(tmp_path), "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    files = json.loads(out.stdout)["files"]
    loaded = ringload.load_folder(tmp_path, threads=2)
    assert sorted(loaded) == ["a", "b"] and sum(file["tensors"] for file in files) == len(loaded)
    for name, tensor in tensors.items():
        assert loaded[name].dtype == tensor.dtype and torch.equal(loaded[name], tensor), name
    converted = ringload.load_folder(tmp_path, dtype=torch.bfloat16)
    assert converted["a"].dtype == torch.bfloat16 and torch.equal(converted["a"], tensors["a"].bfloat16())
    empty = tmp_path / "empty"
    empty.mkdir()
    out = subprocess.run([cli, "load", str(empty)], capture_output=True, text=True, timeout=120)
    with pytest.raises(ringload.RingloadError) as raised:
        ringload.load_folder(empty)
    sentence = f"no weights in {empty} (looked for *.safetensors, *.tensors, *.bin, *.pt)"
    assert out.returncode != 0 and sentence in out.stderr and sentence in str(raised.value), out.stderr
    with pytest.raises(ValueError, match="option threads must be a whole number"):
        ringload.load_folder(tmp_path, threads="many")


def test_the_servers_stream_is_the_model_level_call(tmp_path, monkeypatch):
    """vLLM's and SGLang's streamed path (stream_weights, no read-once group) is the engine's
    model-level call streamed: the same tensors as load_folder of the same files, an encrypted
    model with the extra config's key file, and a signature's words go to the engine, which
    reads the signature before any weight (a missing one is named as `ringload load` names it)."""
    tensors = {f"t{k}": torch.full((k + 1, 3), float(k)) for k in range(6)}
    params = ringload.EncryptionParams.random()
    files = []
    for k in range(3):
        files.append(str(tmp_path / f"part-{k}.tensors"))
        with ringload.TensorSerializer(files[-1], encryption=params) as writer:
            writer.write_state_dict({name: tensors[name] for name in list(tensors)[2 * k:2 * k + 2]})
    key_file = tmp_path / "key"
    key_file.write_bytes(params.key)
    options = weights.parse_options({"uri": files, "key_file": str(key_file), "threads": 2})
    called = []
    real = _ringload_stream_model()
    monkeypatch.setattr("ringload._ringload.stream_model", lambda *a, **k: called.append(a[0]) or real(*a, **k))
    streamed = dict(weights.stream_weights(options.uris, "cpu", options.stream_kwargs))
    assert called == [files], "the servers' stream did not go through the model-level call"
    assert sorted(streamed) == sorted(tensors)
    assert all(torch.equal(streamed[name], tensor) for name, tensor in tensors.items())
    listed = ringload.load_folder(files, encryption=options.stream_kwargs["encryption"])
    assert all(torch.equal(listed[name], tensor) for name, tensor in tensors.items())
    signed = weights.parse_options({"uri": files, "key_file": str(key_file), "signature": str(tmp_path / "m.sig"),
                                    "public_key": str(tmp_path / "pub.pem")})
    with pytest.raises(ringload.SourceNotFoundError, match="m.sig: cannot read the signature"):
        dict(weights.stream_weights(signed.uris, "cpu", signed.stream_kwargs))
    out = subprocess.run([os.environ["RINGLOAD_CLI"], "load", str(tmp_path), "--signature", str(tmp_path / "m.sig"),
                          "--public-key", str(tmp_path / "pub.pem")], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "m.sig: cannot read the signature" in out.stderr, out.stderr


def _ringload_stream_model():
    from ringload import _ringload
    return _ringload.stream_model


def test_a_missing_source_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "gone.safetensors")):
        weights.check_sources([str(tmp_path / "gone.safetensors"), "http://127.0.0.1:1/x"])


def test_register_without_vllm_does_nothing(monkeypatch, caplog):
    """Without vLLM's loader interface, register() registers nothing, says why (each time: a
    later call may find vLLM), returns None and raises nothing. vLLM is hidden here (None in
    sys.modules makes its import fail) so that this holds under .venv-vllm too, which has it."""
    for name in [name for name in sys.modules if name == "vllm" or name.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("vllm", "vllm.model_executor", "vllm.model_executor.model_loader",
                 "vllm.model_executor.model_loader.base_loader"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(vllm_loader, "_registered", None)
    with caplog.at_level(logging.WARNING, logger="ringload.vllm"):
        assert vllm_loader.register() is None
        assert vllm_loader.register() is None
    assert vllm_loader._registered is None
    warnings = [record for record in caplog.records if record.name == "ringload.vllm"]
    assert len(warnings) == 2, caplog.text
    for record in warnings:
        assert record.levelno == logging.WARNING
        assert "the load format 'ringload' is not registered" in record.getMessage()
        assert "not importable" in record.getMessage()
    assert all(sys.modules[name] is None for name in ("vllm", "vllm.model_executor.model_loader"))


def _shards(folder):
    torch.manual_seed(0)
    tensors = {f"model.layers.{k}.weight": torch.randn(4, 8) for k in range(4)}
    tensors["lm_head.weight"] = torch.randn(16, 8).to(torch.bfloat16)
    names = list(tensors)
    ringload.save_file({n: tensors[n] for n in names[:2]}, str(folder / "model-00001-of-00002.safetensors"))
    ringload.save_file({n: tensors[n] for n in names[2:]}, str(folder / "model-00002-of-00002.safetensors"))
    return tensors


@pytest.mark.parametrize("out_name", ["one.tensors", "one.safetensors"])
def test_convert_shards_to_one_file(tmp_path, out_name):
    tensors = _shards(tmp_path)
    out = tmp_path / out_name
    assert vllm_convert.main([str(tmp_path), str(out)]) == 0
    loaded = ringload.load_file(str(out))
    assert list(loaded) == list(tensors)
    for name, tensor in tensors.items():
        assert torch.equal(loaded[name], tensor), name


def test_convert_encrypts_with_a_key_file(tmp_path):
    tensors = _shards(tmp_path)
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    out = tmp_path / "one.tensors"
    assert vllm_convert.main([str(tmp_path), str(out), "--encrypt-key-file", str(key)]) == 0
    with pytest.raises(ringload.DecryptionError):
        ringload.load_file(str(out))
    loaded = ringload.load_file(str(out), encryption=ringload.DecryptionParams.from_key(b"k" * 32))
    assert all(torch.equal(loaded[n], t) for n, t in tensors.items())


def test_convert_names_what_is_wrong(tmp_path, capsys):
    assert vllm_convert.main([str(tmp_path), str(tmp_path / "x.tensors")]) == 1
    assert f"no weights in {tmp_path}" in capsys.readouterr().err
    _shards(tmp_path)
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    assert vllm_convert.main([str(tmp_path), str(tmp_path / "x.safetensors"), "--encrypt-key-file", str(key)]) == 1
    assert capsys.readouterr().err.startswith("ringload.vllm_convert: ")
    assert not os.path.exists(tmp_path / "x.safetensors")
    short = tmp_path / "short"
    short.write_bytes(b"k" * 31)
    assert vllm_convert.main([str(tmp_path), str(tmp_path / "x.tensors"), "--encrypt-key-file", str(short)]) == 1
    assert f"{short}: a key file must hold exactly 32 raw bytes, this one holds 31" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x.tensors")


# vLLM's pre-sharded layout (ringload.servers.vllm_sharded; the real vLLM case is in vllm_test.py).
def test_sharded_layout_gives_each_rank_its_own_files(tmp_path):
    from ringload.servers import vllm_sharded as sharded
    _touch(tmp_path, "config.json", "model.safetensors", "model-rank-0-part-0.safetensors",
           "model-rank-0-part-1.safetensors", "model-rank-1-part-0.safetensors")
    assert sharded.rank_files(str(tmp_path), 0, 2) == [str(tmp_path / "model-rank-0-part-0.safetensors"),
                                                       str(tmp_path / "model-rank-0-part-1.safetensors")]
    assert sharded.rank_files(str(tmp_path), 1, 2) == [str(tmp_path / "model-rank-1-part-0.safetensors")]
    assert sharded.rank_files(str(tmp_path / "missing"), 0, 1) is None
    (tmp_path / "plain").mkdir()
    _touch(tmp_path / "plain", "model.safetensors")
    assert sharded.rank_files(str(tmp_path / "plain"), 0, 1) is None


def test_sharded_layout_for_another_rank_count_is_named(tmp_path):
    from ringload.servers import vllm_sharded as sharded
    _touch(tmp_path, "model-rank-0-part-0.safetensors", "model-rank-1-part-0.safetensors")
    with pytest.raises(ValueError, match=r"for ranks 0, 1, and this server has 4 tensor-parallel rank"):
        sharded.rank_files(str(tmp_path), 0, 4)


def test_sharded_state_loader_copies_as_vllm_does_and_names_what_is_wrong(tmp_path):
    from ringload.servers import vllm_sharded as sharded
    state = {"a": torch.zeros(4, 3), "b": torch.zeros(2)}
    load = sharded.state_dict_loader(state)
    assert load([("a", torch.ones(2, 3))]) == {"a"}  # a smaller tensor fills the leading rows (LoRA padding)
    assert state["a"][:2].eq(1).all() and state["a"][2:].eq(0).all()
    with pytest.raises(ValueError, match="holds c, which this model does not have"):
        load([("c", torch.ones(1))])
    with pytest.raises(ValueError, match="lack\\(s\\) b"):
        sharded.check_complete(state, {"a"}, ["r0.safetensors"])
    path = sharded.write_rank(state, str(tmp_path / "out"), 3)
    assert os.path.basename(path) == "model-rank-3-part-0.safetensors"
    back = ringload.load_file(path)
    assert set(back) == {"a", "b"} and torch.equal(back["a"], state["a"])


def test_save_sharded_state_option_is_checked():
    assert weights.parse_options({"save_sharded_state": "/tmp/x"}).save_sharded_state == "/tmp/x"
    assert "save_sharded_state" not in weights.parse_options({"save_sharded_state": "/tmp/x"}).stream_kwargs
    with pytest.raises(ValueError, match="save_sharded_state"):
        weights.parse_options({"save_sharded_state": ""})


def test_convert_sharded_refuses_what_it_cannot_write(tmp_path, capsys):
    for wrong in (["--sharded", "0"], ["--sharded", "2", "--to", "tensorizer"]):
        with pytest.raises(SystemExit):
            vllm_convert.main([str(tmp_path), str(tmp_path / "out"), *wrong])
    model_file = tmp_path / "model.safetensors"
    model_file.write_bytes(b"")
    assert vllm_convert.main([str(model_file), str(tmp_path / "out"), "--sharded", "1"]) == 1
    assert "needs a model folder" in capsys.readouterr().err


def test_into_parameters_defaults_to_the_cpu_only():
    default = weights.parse_options({})
    assert default.reads_into_parameters("cpu") and not default.reads_into_parameters("cuda:0")
    assert weights.parse_options({"into_parameters": True}).reads_into_parameters("cuda:0")
    assert not weights.parse_options({"into_parameters": False}).reads_into_parameters("cpu")


def _cli_refusal(*args) -> str:
    out = subprocess.run([os.environ["RINGLOAD_CLI"], "load", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0, out.stdout
    return out.stderr


def _listed(message: str) -> list:
    """The names after "the options are " in an unknown option's refusal."""
    return message.split("the options are ", 1)[1].strip().split(", ")


def _front_rows(front: str) -> list:
    return [row for row in ringload._ringload.option_table() if front in row["fronts"]]


@pytest.mark.parametrize("name, value", [("threads", "many"), ("dtype", "int8"), ("slot_size", "-1")])
def test_a_mistyped_value_gets_the_same_words_from_the_cli_python_and_vllm(tmp_path, name, value):
    """One table (ringload/options.hpp) checks a value for every front end: the CLI's flag, a
    Python entry point's keyword and the server loaders' extra config say the same sentence."""
    path = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.ones(3)}, str(path))
    row = next(row for row in ringload._ringload.option_table() if row["name"] == name)
    cli = _cli_refusal(str(path), row["cli_flag"], value)
    with pytest.raises(ValueError) as python:
        ringload.TensorDeserializer(str(path), device="cpu", **{name: value})
    sentence = f"option {name} must be "
    said = str(python.value)[str(python.value).index(sentence):]
    assert said.endswith(f", not '{value}'") and said in cli
    if "server" in row["fronts"]:
        with pytest.raises(ValueError) as server:
            weights.parse_options({name: value})
        assert str(server.value).endswith(said)


def test_an_unknown_option_gets_the_same_words_listing_what_each_front_end_takes(tmp_path):
    path = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.ones(3)}, str(path))
    cli = _cli_refusal(str(path), "--thread", "2")
    assert "unknown option '--thread'; the options are " in cli
    assert {row["cli_flag"] for row in _front_rows("cli") if row["kind"] != "flag" or row["default"] != "true"} <= \
        set(_listed(cli))
    with pytest.raises(ValueError) as python:
        ringload.TensorDeserializer(str(path), device="cpu", thread=2)
    assert "unknown option 'thread'; the options are " in str(python.value)
    assert _listed(str(python.value)) == [row["name"] for row in _front_rows("python")]
    with pytest.raises(ValueError) as server:
        weights.parse_options({"thread": 2})
    assert "unknown option 'thread'; the options are " in str(server.value)
    assert _listed(str(server.value)) == [row["name"] for row in _front_rows("server")] == list(weights.OPTIONS)


@pytest.mark.parametrize("ring_bytes, slot_size", [(1 << 20, 0), (128 << 20, 0), (9 << 20, 4 << 20)])
def test_the_ring_is_sized_by_the_engines_rule(tmp_path, ring_bytes, slot_size):
    """ring_bytes given to Python (or through vLLM's extra config) makes the ring the CLI's
    --ring-bytes makes (ringload/options.hpp's slots_for_ring; the C++ side: option_table_test)."""
    path = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.ones(3)}, str(path))
    kwargs = weights.parse_options({"ring_bytes": ring_bytes, "slot_size": slot_size}).stream_kwargs
    with ringload.TensorDeserializer(str(path), device="cpu", lazy_load=True, **kwargs) as deserializer:
        assert deserializer.reads.slot_count == ringload._ringload.slots_for_ring(ring_bytes, slot_size)
    assert ringload._ringload.slots_for_ring(1 << 20, 0) == 1  # less than a slot is one slot


@pytest.mark.parametrize("name, value", [("format", "tensorflow"), ("memory_budget", "lots"),
                                         ("verify_hash", "maybe")])
def test_a_mistyped_write_option_gets_the_same_words_from_the_cli_and_python(tmp_path, name, value):
    """A write's rows (ringload/options.hpp's write_option_table) check `ringload convert`'s flags
    and Python's convert keywords with one sentence."""
    source = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.ones(3)}, str(source))
    row = next(row for row in ringload._ringload.write_option_table() if row["name"] == name)
    out = subprocess.run([os.environ["RINGLOAD_CLI"], "convert", str(source), str(tmp_path / "out.tensors"),
                          row["cli_flag"], value], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    with pytest.raises(ValueError) as python:
        ringload.convert(str(source), str(tmp_path / "out.tensors"), **{name: value})
    sentence = f"option {name} must be "
    said = str(python.value)[str(python.value).index(sentence):]
    assert said.endswith(f", not '{value}'") and said in out.stderr, (said, out.stderr)
    assert not (tmp_path / "out.tensors").exists()


def test_a_write_option_given_with_its_unit_is_the_same_in_the_cli_and_python(tmp_path):
    source = tmp_path / "model.safetensors"
    ringload.save_file({"a": torch.arange(1000.0)}, str(source))
    out = subprocess.run([os.environ["RINGLOAD_CLI"], "convert", str(source), str(tmp_path / "cli.tensors"),
                          "--memory-budget", "1K", "--verify", "false"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert ringload._ringload.check_write_option("memory_budget", 1024, "python") == 1024
    done = ringload.convert(str(source), str(tmp_path / "python.tensors"), memory_budget=1024, verify_hash=False)
    assert done["tensors"] == 1
    assert (tmp_path / "cli.tensors").read_bytes() == (tmp_path / "python.tensors").read_bytes()


def test_vllm_convert_takes_the_write_rows_as_ringload_convert_does(tmp_path, capsys):
    """vllm_convert's --to, --encrypt-*-file and --memory-budget are the write's rows: the same
    help, byte units and words as `ringload convert`'s flags."""
    tensors = _shards(tmp_path)
    out = tmp_path / "one.safetensors"
    assert vllm_convert.main([str(tmp_path), str(out), "--memory-budget", "1K"]) == 0
    loaded = ringload.load_file(str(out))
    assert all(torch.equal(loaded[n], t) for n, t in tensors.items())
    with pytest.raises(SystemExit):
        vllm_convert.main([str(tmp_path), str(out), "--memory-budget", "lots"])
    said = capsys.readouterr().err
    assert "--memory-budget: " in said and "option memory_budget must be a number of bytes" in said
    with pytest.raises(SystemExit):
        vllm_convert.main(["--help"])
    helped = capsys.readouterr().out
    row = next(row for row in ringload._ringload.write_option_table() if row["name"] == "encrypt_key_file")
    assert " ".join(row["help"].split()) in " ".join(helped.split())
