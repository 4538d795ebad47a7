"""What the vLLM loader needs that has nothing to do with vLLM: its options, where a model
folder keeps its weights, and the (name, tensor) stream over several files.

    options = parse_options({"uri": "s3://models/llama.tensors", "verify_hash": True})
    sources = options.uris or find_weight_files("/models/llama")
    for name, tensor in stream_weights(sources, "cpu", options.stream_kwargs):
        ...

Kept apart from vllm_loader.py so that it can be tested, and used by vllm_convert, without
vLLM installed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Tuple

from ._crypto import DecryptionParams
from . import _ringload
from ._opening import is_remote


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _non_negative_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _text(value) -> bool:
    return isinstance(value, str) and value != ""


def _uris(value) -> bool:
    if isinstance(value, str):
        return value != ""
    return isinstance(value, list) and value != [] and all(_text(item) for item in value)


def _engine_option(row: dict):
    """(check, what it must be) for a row of the engine's option table (ringload/options.hpp)."""
    kind, default = row["kind"], f" (default {row['default']})" if row["default"] else ""
    if kind == "choice":
        return (lambda v, choices=tuple(row["choices"]): v in choices,
                " or ".join(f'"{choice}"' for choice in row["choices"]) + default)
    return {
        "count": (_positive_int, "a positive integer" + default),
        "bytes": (_non_negative_int, "bytes, an integer (0: the default)"),
        "seconds": (_number, "seconds, a positive number" + default),
        "flag": (lambda v: isinstance(v, bool), "true or false"),
    }.get(kind, (_text, row["help"]))


# name -> (check, what it must be): the loader's own, then every row of the engine's option
# table (network, placement, each registered source's: s3_endpoint, gcs_credentials, ...).
# Everything but uri, key_file, passphrase_file, read_once, into_parameters and
# save_sharded_state goes to stream_tensors (TensorDeserializer's keyword arguments) by name.
OPTIONS = {
    "uri": (_uris, "a path or URL (file, or any registered source's: "
            + ", ".join(source["uri_forms"] for source in _ringload.sources()) + "), or a list of them"),
    "verify_hash": (lambda v: isinstance(v, bool), "true or false"),
    "key_file": (_text, "the path of a file holding the raw 32-byte key"),
    "passphrase_file": (_text, "the path of a file holding the passphrase"),
    **{row["name"]: _engine_option(row) for row in _ringload.option_table()},
    "ring_bytes": (_non_negative_int, "bytes, an integer (0: the default)"),
    "slot_size": (_non_negative_int, "bytes, an integer (0: the default)"),
    "threads": (_non_negative_int, "an integer (0: one per core)"),
    "read_once": (lambda v: isinstance(v, bool), "true or false (default true: with tensor parallelism, the "
                  "ranks split the reading and share the bytes over their group)"),
    "into_parameters": (lambda v: isinstance(v, bool), "true or false (default: on the CPU, each tensor is read "
                        "straight into the parameters the model's load_weights would copy it to; on a GPU only "
                        "when true, until checked on a device)"),
    "save_sharded_state": (_text, "a folder: after loading, each rank writes its parameters there in vLLM's "
                           "pre-sharded layout (python -m ringload.vllm_convert --sharded)"),
    "signature": (_text, "the model's OpenSSF Model Signing signature file: every weight file is verified "
                  "while it loads, the folder's other files after; a mismatch fails the start"),
    "public_key": (_text, "the signer's PEM public key (with signature)"),
    "certificate_chain": (_uris, "PEM certificates to trust for a certificate signature (a path or a list)"),
    "trust_root": (_text, "a keyless signature: Sigstore's trusted_root.json (or a ClientTrustConfig), checked "
                   "offline"),
    "identity": (_text, "a keyless signature: who must have signed (the certificate's email or URI)"),
    "identity_issuer": (_text, "a keyless signature: the OIDC issuer that vouched for identity"),
    "model_folder": (_text, "the signed model's folder (default: the weight files' folder)"),
}


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
    unknown = sorted(set(config) - set(OPTIONS))
    if unknown:
        raise ValueError(f"ringload: unknown option(s) {', '.join(map(repr, unknown))} in "
                         f"model_loader_extra_config; the known ones are: {', '.join(OPTIONS)}")
    for name, value in config.items():
        check, wanted = OPTIONS[name]
        if not check(value):
            raise ValueError(f"ringload: model_loader_extra_config option {name!r} must be {wanted}, not {value!r}")
    if "key_file" in config and "passphrase_file" in config:
        raise ValueError("ringload: give key_file or passphrase_file in model_loader_extra_config, not both")
    uris = config.pop("uri", [])
    options = LoaderOptions(uris=[uris] if isinstance(uris, str) else list(uris),
                            read_once=config.pop("read_once", True),
                            into_parameters=config.pop("into_parameters", None),
                            save_sharded_state=config.pop("save_sharded_state", None))
    encryption = _decryption(config.pop("key_file", None), config.pop("passphrase_file", None))
    if encryption is not None:
        config["encryption"] = encryption
    options.stream_kwargs = config
    return options


def _read_secret(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as error:
        raise ValueError(f"ringload: cannot read the {what} {path}: {error.strerror}") from None


def _decryption(key_file, passphrase_file):
    """DecryptionParams from a key file (the raw 32 bytes) or a passphrase file (one trailing
    newline ignored), as the CLI's --key-file and --passphrase-file read them."""
    if key_file is not None:
        key = _read_secret(key_file, "key file")
        if len(key) != 32:
            raise ValueError(f"ringload: the key file {key_file} holds {len(key)} bytes, not the 32 of a raw key")
        return DecryptionParams.from_key(key)
    if passphrase_file is not None:
        passphrase = _read_secret(passphrase_file, "passphrase file")
        passphrase = passphrase[:-1] if passphrase.endswith(b"\n") else passphrase
        if not passphrase:
            raise ValueError(f"ringload: the passphrase file {passphrase_file} is empty")
        return DecryptionParams.from_string(passphrase)
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
    """(name, tensor) of every source in turn, each tensor as it lands; a source is opened
    when the one before it is done, so only one load's memory is held at a time."""
    from ._stream import stream_tensors
    for source in sources:
        yield from stream_tensors(source, device=device, **stream_kwargs)
