"""OpenSSF Model Signing: a model folder's signature checked, or written (ringload/model_signing.hpp).

    ringload.verify_model("/models/llama", "/models/llama.sig", public_key="pub.pem")
    ringload.verify_model(folder, sig, certificate_chain=["ca.pem"])
    ringload.sign_model(folder, "model.sig", private_key="key.pem")   # model_signing verify key accepts it

verify_model raises SignatureError (the signature, the key, the certificate, an extra or a
missing file), HashMismatchError (a changed file or shard) or another RingloadError, each naming
the signature file and what is wrong; it returns what was checked (files, resources, bytes,
seconds, signer, sharded).
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

from . import _ringload


def verify_model(model, signature, *, public_key: Optional[str] = None, certificate_chain: Iterable[str] = (),
                 ignore_paths: Iterable[str] = (), ignore_git_paths: bool = True, threads: int = 0) -> dict:
    """Checks `signature` (model_signing's bundle) over `model` (a folder or one file), reading
    every file on every core."""
    return _ringload.verify_model_signature(os.fspath(model), os.fspath(signature),
                                            public_key=os.fspath(public_key) if public_key else "",
                                            certificate_chain=[os.fspath(c) for c in certificate_chain],
                                            ignore_paths=list(ignore_paths), ignore_git_paths=ignore_git_paths,
                                            threads=threads)


def sign_model(model, signature, *, private_key: str, ignore_paths: Iterable[str] = (),
               ignore_git_paths: bool = True, threads: int = 0) -> dict:
    """Writes `signature` for `model` with an ECDSA private key (PEM), the key method."""
    return _ringload.sign_model(os.fspath(model), os.fspath(signature), os.fspath(private_key),
                                ignore_paths=list(ignore_paths), ignore_git_paths=ignore_git_paths, threads=threads)
