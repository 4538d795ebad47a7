"""What the server loaders (vLLM's, SGLang's, vllm_convert) share that belongs to no server:
their options (the option table's server rows), where a model folder keeps its weights, and
the (name, tensor) stream over several files.

    options = parse_options({"uri": "s3://models/llama.tensors", "verify_hash": True})
    sources = options.uris or find_weight_files("/models/llama")
    for name, tensor in stream_weights(sources, "cpu", options.stream_kwargs):   # the model-level call
        ...

Kept apart from vllm_loader.py and sglang_loader.py so that it can be tested, and used by
vllm_convert, without either server installed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Tuple

from ..errors import RingloadError
from ..ground.crypto import DecryptionParams
from .. import _ringload
from ..ground.opening import is_remote


# The words the server loaders take (vLLM's and SGLang's model_loader_extra_config): the rows of
# the engine's option table that name the "server" front end (ringload/options.hpp): network,
# placement, ring and threads, verify_hash, keys, the signature's, each registered source's, and
# the loaders' own (uri, read_once, into_parameters, save_sharded_state). Each is checked by
# the engine (_ringload.check_option), with the words the CLI and the Python entry points use.
OPTIONS = {row["name"]: row for row in _ringload.option_table() if "server" in row["fronts"]}

# uri, key_file, passphrase_file, read_once, into_parameters and save_sharded_state the loader
# applies itself; the others go to stream_tensors (TensorDeserializer's keywords) by name.

@dataclass
class LoaderOptions:
    """model_loader_extra_config, checked: where the weights are and how to read them."""

    uris: List[str] = field(default_factory=list)
    stream_kwargs: dict = field(default_factory=dict)
    read_once: bool = True
    into_parameters: Optional[bool] = None  # None: on the CPU only
    save_sharded_state: Optional[str] = None  # a folder to write each rank's parameters to

    def reads_into_parameters(self, device: str) -> bool:
        return self.into_parameters if self.into_parameters is not None else device == "cpu"


def parse_options(extra_config) -> LoaderOptions:
    """Checks every option (an unknown one is refused with the list of known ones, since a
    typo would otherwise be ignored silently) and reads the key or passphrase file now, so
    that a missing one fails before any weights are read."""
    if extra_config is not None and not isinstance(extra_config, dict):
        raise ValueError("ringload: model_loader_extra_config must be a JSON object (a dict), not "
                         f"{type(extra_config).__name__}")
    config = dict(extra_config or {})
    unknown = [name for name in config if name not in OPTIONS]
    if unknown:
        try:
            _ringload.check_option(unknown[0], None, "server")
        except ValueError as error:  # the engine's words, every unknown name in them
            names = ", ".join(map(repr, unknown))
            raise ValueError(f"ringload: model_loader_extra_config: {str(error).replace(repr(unknown[0]), names, 1)}"
                             ) from None
    for name, value in config.items():
        try:
            config[name] = _ringload.check_option(name, value, "server")
        except ValueError as error:
            raise ValueError(f"ringload: model_loader_extra_config: {error}") from None
    if "key_file" in config and "passphrase_file" in config:
        raise ValueError("ringload: give key_file or passphrase_file in model_loader_extra_config, not both")
    uris = config.pop("uri", [])
    options = LoaderOptions(uris=list(uris),
                            read_once=config.pop("read_once", True),
                            into_parameters=config.pop("into_parameters", None),
                            save_sharded_state=config.pop("save_sharded_state", None))
    encryption = _decryption(config.pop("key_file", None), config.pop("passphrase_file", None))
    if encryption is not None:
        config["encryption"] = encryption
    options.stream_kwargs = config
    return options


def _decryption(key_file, passphrase_file):
    """DecryptionParams from a key file or a passphrase file, read by the engine's rule (as the
    CLI's --key-file and --passphrase-file: ringload/crypto_params.hpp), its words kept."""
    try:
        if key_file is not None:
            return DecryptionParams.from_key_file(key_file)
        if passphrase_file is not None:
            return DecryptionParams.from_passphrase_file(passphrase_file)
    except RingloadError as error:
        raise ValueError(f"ringload: model_loader_extra_config: {error}") from None
    return None


# What a Hugging Face folder holds, in the order vLLM's default loader prefers them, then
# tensorizer (a folder with a converted file); each with the index that may list its shards.
def find_weight_files(folder: str) -> List[str]:
    """The weight files of a model folder: every shard of the first layout present (the ones
    its index json names, where there is one), sorted; the engine's rule (ringload/model_load.hpp),
    which `ringload load DIR` follows too."""
    try:
        return _ringload.find_weight_files(folder)
    except ValueError as error:
        raise ValueError(f"ringload: {error}; give the weights' location as "
                         'model_loader_extra_config {"uri": ...}') from None


def check_sources(sources: List[str]) -> None:
    """A local file that is missing fails here, by name, before vLLM builds anything on it."""
    for source in sources:
        if not is_remote(source) and not os.path.isfile(source):
            raise FileNotFoundError(f"ringload: the weights file {source} does not exist")


def stream_weights(sources: List[str], device: str, stream_kwargs: dict) -> Iterator[Tuple[str, object]]:
    """(name, tensor) of every source, each tensor as it lands: the engine's model-level call
    streamed (ringload.stream_folder: the files read side by side, as many as host memory and,
    on a GPU, the device's free memory hold; a signature checked for the sources' folder before
    any read, each file verified in its read, the folder's other files hashed after). With a
    process_group (read once over tensor parallelism) each source is streamed in turn, its
    share read by this rank and the rest moved over the group."""
    if stream_kwargs.get("process_group") is None:
        from ..dropin.model_load import stream_folder
        kwargs = {name: value for name, value in stream_kwargs.items() if name != "process_group"}
        yield from stream_folder(list(sources), device=device, **kwargs)
        return
    from ..dropin.stream import stream_tensors
    for source in sources:
        yield from stream_tensors(source, device=device, **stream_kwargs)
