"""tests/bindings/object_stores_python_test.py: gs:// and az:// in every Python front end, with
no code for them in the package (issue #39): the sources' settings are the option table's rows,
passed as keyword arguments and vLLM options like any other.

Against a real GCS emulator (fake-gcs-server) behind the token-checking proxy, with a service
account's key (a JWT exchanged at a stand-in token endpoint), and an Azure Blob stand-in that
checks every request's Shared Key signature with azure-storage-blob's own code: load_file,
safe_open (a slice), stream_tensors, TensorDeserializer (tensorizer, hashes verified, against its
manifest), convert to gs:// (a write) and back, and the vLLM loader's option check. A server
that does not start fails the run.

Run by ctest (test `object_stores_python`, .venv: the Azure SDK is there) with PYTHONPATH at
<build>/bindings/python:tests/support.
"""
import base64
import hashlib
import json
import os
import shutil
import tempfile

import pytest
import safetensors.torch as safetensors_torch
import torch

import ringload
from ringload.servers import weights as server_weights

from azure_server import AzureServer
from gcs_server import FakeGcsServer, GcsProxy, TokenServer

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
FIXTURE = os.path.join(DATA, "tensorizer", "basic_v1.tensors")
ACCOUNT, KEY = "ringloadtest", base64.b64encode(bytes(range(64))).decode()
TENSORS = {"a": torch.arange(48.0).reshape(6, 8), "b": torch.ones(5, dtype=torch.int32),
           "c": torch.randn(3, 4).to(torch.bfloat16)}


@pytest.fixture(scope="module")
def folder():
    path = tempfile.mkdtemp(prefix="ringload-stores-")
    with open(os.path.join(path, "model.safetensors"), "wb") as file:
        file.write(safetensors_torch.save(TENSORS))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def gcs(folder):
    with FakeGcsServer() as server, TokenServer() as tokens, GcsProxy(server, tokens) as proxy:
        server.create_bucket("models")
        server.upload("models", "model.safetensors", os.path.join(folder, "model.safetensors"))
        server.upload("models", "basic_v1.tensors", FIXTURE)
        key_file = tokens.service_account(os.path.join(folder, "sa.json"))
        yield {"server": server, "tokens": tokens,
               "options": {"gcs_endpoint": proxy.url, "gcs_credentials": key_file}}


@pytest.fixture(scope="module")
def azure(folder):
    with AzureServer(ACCOUNT, KEY) as server:
        server.create_container("models")
        server.put("models", "model.safetensors", os.path.join(folder, "model.safetensors"))
        server.put("models", "basic_v1.tensors", FIXTURE)
        yield {"server": server, "options": {"azure_endpoint": server.endpoint, "azure_account_key": KEY}}


def stores(gcs, azure):
    return {"gs": ("gs://models", gcs["options"]), "az": (f"az://{ACCOUNT}/models", azure["options"])}


def equal(got: dict) -> bool:
    return set(got) == set(TENSORS) and all(torch.equal(got[name], TENSORS[name]) for name in TENSORS)


@pytest.mark.parametrize("store", ["gs", "az"])
def test_load_file_safe_open_and_stream(gcs, azure, store):
    prefix, options = stores(gcs, azure)[store]
    uri = f"{prefix}/model.safetensors"
    assert equal(ringload.load_file(uri, **options))
    with ringload.safe_open(uri, framework="pt", **options) as file:
        assert sorted(file.keys()) == sorted(TENSORS)
        assert torch.equal(file.get_slice("a")[1:3, 2:5], TENSORS["a"][1:3, 2:5])
    assert equal({name: tensor.clone() for name, tensor in ringload.stream_tensors(uri, **options)})


@pytest.mark.parametrize("store", ["gs", "az"])
def test_tensor_deserializer_verifies_a_tensorizer_fixture(gcs, azure, store):
    prefix, options = stores(gcs, azure)[store]
    with open(FIXTURE + ".json") as file:
        manifest = json.load(file)
    with ringload.TensorDeserializer(f"{prefix}/basic_v1.tensors", device="cpu", verify_hash=True,
                                     **options) as deserializer:
        for tensor in manifest["tensors"]:
            loaded = deserializer[tensor["name"]].contiguous().reshape(-1)
            assert hashlib.sha256(loaded.view(torch.uint8).numpy().tobytes()).hexdigest() == tensor["sha256"]


def test_convert_writes_to_gs_and_reads_back(gcs, folder):
    options = gcs["options"]
    ringload.convert(os.path.join(folder, "model.safetensors"), "gs://models/written.safetensors", **options)
    written = gcs["server"].download("models", "written.safetensors")
    assert written is not None and equal(safetensors_torch.load(written))
    assert equal(ringload.load_file("gs://models/written.safetensors", **options))


def test_a_source_option_of_the_wrong_kind_is_refused_naming_it(gcs):
    with pytest.raises(ValueError, match="gcs_anonymous must be true or false"):
        ringload.load_file("gs://models/model.safetensors", gcs_anonymous="perhaps", **gcs["options"])


def test_vllm_options_take_every_source_option(gcs, azure):
    parsed = server_weights.parse_options({"uri": "gs://models/model.safetensors", **gcs["options"]})
    assert parsed.uris == ["gs://models/model.safetensors"]
    assert all(parsed.stream_kwargs[name] == value for name, value in gcs["options"].items())
    parsed = server_weights.parse_options({"uri": f"az://{ACCOUNT}/models/model.safetensors", **azure["options"]})
    assert all(parsed.stream_kwargs[name] == value for name, value in azure["options"].items())
    with pytest.raises(ValueError, match="gcs_anonymous"):
        server_weights.parse_options({"uri": "gs://models/m.safetensors", "gcs_anonymous": "yes"})


def test_tensor_serializer_writes_to_gs(gcs):
    options = gcs["options"]
    with ringload.TensorSerializer("gs://models/serialized.tensors", **options) as serializer:
        serializer.write_state_dict(TENSORS)
    assert gcs["server"].download("models", "serialized.tensors") is not None
    with ringload.TensorDeserializer("gs://models/serialized.tensors", device="cpu", verify_hash=True,
                                     **options) as deserializer:
        assert equal({name: deserializer[name] for name in deserializer.keys()})
