"""OpenSSF Model Signing: a model folder's signature checked, or written (ringload/model_signing.hpp).

    ringload.verify_model("/models/llama", "/models/llama.sig", public_key="pub.pem")
    ringload.verify_model(folder, sig, certificate_chain=["ca.pem"])
    ringload.sign_model(folder, "model.sig", private_key="key.pem")   # model_signing verify key accepts it

Loads verify in their single read: load_file, safe_open, stream_tensors and TensorDeserializer
take signature=, public_key= or certificate_chain= (or a keyless signature's trust_root=,
identity=, identity_issuer=), and model_folder= (default: the file's own
folder; a signature of one file needs none). The bundle, the signer and the statement are checked
before any byte is read; then the load reads the whole file, hashes it beside its own work and
raises HashMismatchError naming the file (and shard) before any tensor is handed out when it
differs (open_engine, take_signature).

verify_model raises SignatureError (the signature, the key, the certificate, an extra or a
missing file), HashMismatchError (a changed file or shard) or another RingloadError, each naming
the signature file and what is wrong; it returns what was checked (files, resources, bytes,
seconds, signer, sharded).
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

from .. import _ringload


def verify_model(model, signature, *, public_key: Optional[str] = None, certificate_chain: Iterable[str] = (),
                 trust_root: Optional[str] = None, identity: Optional[str] = None,
                 identity_issuer: Optional[str] = None, ignore_paths: Iterable[str] = (),
                 ignore_git_paths: bool = True, threads: int = 0) -> dict:
    """Checks `signature` (model_signing's bundle) over `model` (a folder or one file), reading
    every file on every core. A keyless signature: trust_root (Sigstore's trusted_root.json, or
    a ClientTrustConfig), identity (the signer's email or URI) and identity_issuer (its OIDC
    issuer), checked offline."""
    return _ringload.verify_model_signature(os.fspath(model), os.fspath(signature),
                                            **_trust(public_key, certificate_chain, trust_root, identity,
                                                     identity_issuer),
                                            ignore_paths=list(ignore_paths), ignore_git_paths=ignore_git_paths,
                                            threads=threads)


def _trust(public_key, certificate_chain, trust_root, identity, identity_issuer) -> dict:
    """Whom to trust, as the binding takes it."""
    if isinstance(certificate_chain, (str, os.PathLike)):
        certificate_chain = (certificate_chain,)
    return {"public_key": os.fspath(public_key) if public_key else "",
            "certificate_chain": [os.fspath(c) for c in certificate_chain or ()],
            "trust_root": os.fspath(trust_root) if trust_root else "", "identity": identity or "",
            "identity_issuer": identity_issuer or ""}


def sign_model(model, signature, *, private_key: str, ignore_paths: Iterable[str] = (),
               ignore_git_paths: bool = True, threads: int = 0) -> dict:
    """Writes `signature` for `model` with an ECDSA private key (PEM), the key method."""
    return _ringload.sign_model(os.fspath(model), os.fspath(signature), os.fspath(private_key),
                                ignore_paths=list(ignore_paths), ignore_git_paths=ignore_git_paths, threads=threads)


# The words a load takes for a signed model: the option table's signature rows.
SIGNATURE_OPTIONS = tuple(row["name"] for row in _ringload.option_table() if row["target"] == "signature")


def take_signature(options: dict) -> Optional[dict]:
    """Pops the signature words from a load's keyword arguments: None when no signature was given
    (and none of the others, which would otherwise be ignored)."""
    given = {name: options.pop(name) for name in SIGNATURE_OPTIONS if name in options}
    if given.get("signature") is None:
        stray = [name for name, value in given.items() if value not in (None, (), [])]
        if stray:
            raise ValueError(f"{', '.join(stray)} without signature=: give the model's signature file")
        return None
    return given


def open_signed(uri: str, given: dict):
    """(SignedModel, SignedFile) for a load of `uri` under a signature: the bundle, its signer
    and its statement checked, the file one that the statement lists."""
    path = _ringload.local_path(uri)
    if path is None:
        raise ValueError(f"{uri}: signatures are verified for local files so far, not for a remote source")
    model = _ringload.open_signed_model(os.fspath(given.get("model_folder") or ""), path, os.fspath(given["signature"]),
                                        **_given_trust(given), ignore_paths=list(given.get("ignore_paths") or ()),
                                        ignore_git_paths=given.get("ignore_git_paths", True))
    return model, model.file(path)


def _given_trust(given: dict) -> dict:
    return _trust(given.get("public_key"), given.get("certificate_chain"), given.get("trust_root"),
                  given.get("identity"), given.get("identity_issuer"))


def open_model(sources, options: dict):
    """The signed model a server loads `sources` (local weight files) of, checked whole (its
    file list against the statement) before any weight is read; None without signature=.
    Its verify_files(sources) hashes the folder's other files once the weights are in."""
    given = take_signature(dict(options))
    if given is None:
        return None
    paths = [_ringload.local_path(source) for source in sources]
    if None in paths or not paths:
        raise ValueError("signature: the weights must be local files to be verified (remote sources: not yet)")
    folder = given.get("model_folder") or os.path.dirname(paths[0]) or "."
    return _ringload.open_signed_model(os.fspath(folder), "", os.fspath(given["signature"]), **_given_trust(given),
                                       ignore_paths=list(given.get("ignore_paths") or ()),
                                       ignore_git_paths=given.get("ignore_git_paths", True))
