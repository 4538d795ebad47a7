"""Encryption and decryption parameters, spelled as tensorizer spells them.

    EncryptionParams.random()                   a fresh 32-byte key (keep .key: it is the only way in)
    EncryptionParams.from_string("passphrase")  Argon2id with a fresh salt, at tensorizer's default cost
    DecryptionParams.from_key(key_bytes)
    DecryptionParams.from_string("passphrase")
"""
from __future__ import annotations

from typing import Optional


class EncryptionParams:
    """How a TensorSerializer encrypts: a raw 32-byte key, or a passphrase."""

    def __init__(self, key: Optional[bytes] = None, *, passphrase: Optional[str] = None,
                 opslimit: int = 3, memlimit: int = 256 << 20):
        if (key is None) == (passphrase is None):
            raise ValueError("EncryptionParams takes a key or a passphrase")
        if key is not None and len(key) != 32:
            raise ValueError(f"an encryption key is 32 bytes, not {len(key)}")
        self.key = bytes(key) if key is not None else None
        self._passphrase = passphrase
        self._opslimit, self._memlimit = opslimit, memlimit

    @classmethod
    def random(cls) -> "EncryptionParams":
        from . import _ringload
        return cls(_ringload.random_key())

    @classmethod
    def from_string(cls, source: str | bytes, opslimit: int = 3, memlimit: int = 256 << 20) -> "EncryptionParams":
        if isinstance(source, bytes):
            source = source.decode("utf-8")
        if not source:
            raise ValueError("an empty passphrase")
        return cls(passphrase=source, opslimit=opslimit, memlimit=memlimit)

    def __repr__(self) -> str:  # never the secret
        return f"EncryptionParams({'key' if self.key is not None else 'passphrase'})"


class DecryptionParams:
    """How a TensorDeserializer decrypts: the raw key, or the passphrase (the file holds the salt)."""

    def __init__(self, key: Optional[bytes] = None, *, passphrase: Optional[str] = None):
        if (key is None) == (passphrase is None):
            raise ValueError("DecryptionParams takes a key or a passphrase")
        self.key = bytes(key) if key is not None else None
        self._passphrase = passphrase

    @classmethod
    def from_key(cls, key: bytes) -> "DecryptionParams":
        if len(key) != 32:
            raise ValueError(f"a decryption key is 32 bytes, not {len(key)}")
        return cls(bytes(key))

    @classmethod
    def from_string(cls, source: str | bytes) -> "DecryptionParams":
        if isinstance(source, bytes):
            source = source.decode("utf-8")
        if not source:
            raise ValueError("an empty passphrase")
        return cls(passphrase=source)

    def __repr__(self) -> str:
        return f"DecryptionParams({'key' if self.key is not None else 'passphrase'})"


def secret_kwargs(params) -> dict:
    """The engine's key=/passphrase= for EncryptionParams, DecryptionParams or None."""
    if params is None:
        return {}
    if params.key is not None:
        return {"key": params.key}
    return {"passphrase": params._passphrase}


def encryption_kwargs(params) -> dict:
    """secret_kwargs for a writer's EncryptionParams, with the Argon2id cost of a passphrase."""
    kwargs = secret_kwargs(params)
    if params is not None and params.key is None:
        kwargs.update(opslimit=params._opslimit, memlimit=params._memlimit)
    return kwargs
