"""Encryption and decryption parameters, spelled as tensorizer spells them.

    EncryptionParams.random()                   a fresh 32-byte key (keep .key: it is the only way in)
    EncryptionParams.from_string("passphrase")  Argon2id with a fresh salt, at tensorizer's default cost
    EncryptionParams.from_string("passphrase", opslimit=EncryptionParams.OpsLimit.MIN,
                                 memlimit=EncryptionParams.MemLimit.MIN, salt=bytes(16))
    DecryptionParams.from_key(key_bytes)
    DecryptionParams.from_string("passphrase")

The engine also takes tensorizer's own EncryptionParams (made from a key) and DecryptionParams.
"""
from __future__ import annotations

import enum
import os
from typing import Optional, Union

_SALT_BYTES = 16  # libsodium's crypto_pwhash_SALTBYTES


class _OpsLimit(enum.IntEnum):
    """Argon2id's passes (libsodium's crypto_pwhash presets), as tensorizer's EncryptionParams.OpsLimit."""
    MIN = 1
    INTERACTIVE = 2
    MODERATE = 3
    SENSITIVE = 4


class _MemLimit(enum.IntEnum):
    """Argon2id's memory in bytes (libsodium's crypto_pwhash presets), as tensorizer's MemLimit."""
    MIN = 8 << 10
    INTERACTIVE = 64 << 20
    MODERATE = 256 << 20
    SENSITIVE = 1 << 30


def _salt_bytes(salt: Union[str, bytes, bytearray, memoryview, None], encoding: str) -> Optional[bytes]:
    if salt is None:
        return None
    if isinstance(salt, str):
        salt = salt.encode(encoding)
    elif not isinstance(salt, (bytes, bytearray, memoryview)):
        raise TypeError(f"a salt is bytes or str, not {type(salt).__name__}")
    if len(salt) != _SALT_BYTES:
        raise ValueError(f"a salt is {_SALT_BYTES} bytes, not {len(salt)}")
    return bytes(salt)


class EncryptionParams:
    """How a TensorSerializer encrypts: a raw 32-byte key, or a passphrase."""

    OpsLimit = _OpsLimit
    MemLimit = _MemLimit

    def __init__(self, key: Optional[bytes] = None, *, passphrase: Optional[str] = None,
                 opslimit: int = _OpsLimit.MODERATE, memlimit: int = _MemLimit.MODERATE,
                 salt: Optional[bytes] = None):
        if (key is None) == (passphrase is None):
            raise ValueError("EncryptionParams takes a key or a passphrase")
        if key is not None and len(key) != 32:
            raise ValueError(f"an encryption key is 32 bytes, not {len(key)}")
        self.key = bytes(key) if key is not None else None
        self._passphrase = passphrase
        self._opslimit, self._memlimit = int(opslimit), int(memlimit)
        self._salt = _salt_bytes(salt, "utf-8")

    @classmethod
    def random(cls) -> "EncryptionParams":
        from .. import _ringload
        return cls(_ringload.random_key())

    @classmethod
    def from_string(cls, source: str | bytes, opslimit: Optional[int] = None, memlimit: Optional[int] = None,
                    salt: Union[str, bytes, None] = None, *, encoding: str = "utf-8") -> "EncryptionParams":
        """The key Argon2id derives from `source` at this cost (None: MODERATE, tensorizer's
        default) with `salt` (16 bytes, or a str of 16 bytes in `encoding`; None: a random one).
        The file records the cost and the salt, so DecryptionParams.from_string(source) reads it."""
        if isinstance(source, bytes):
            source = source.decode(encoding)
        if not source:
            raise ValueError("an empty passphrase")
        return cls(passphrase=source, opslimit=_OpsLimit.MODERATE if opslimit is None else opslimit,
                   memlimit=_MemLimit.MODERATE if memlimit is None else memlimit, salt=_salt_bytes(salt, encoding))

    @classmethod
    def from_key_file(cls, path: str) -> "EncryptionParams":
        """The raw key a file holds: exactly 32 bytes (the engine's rule, as the CLI's --key-file)."""
        from .. import _ringload
        return cls(_ringload.read_key_file(os.fspath(path)))

    @classmethod
    def from_passphrase_file(cls, path: str, opslimit: Optional[int] = None,
                             memlimit: Optional[int] = None) -> "EncryptionParams":
        """from_string of the passphrase a file holds (one trailing newline dropped; not empty)."""
        from .. import _ringload
        return cls.from_string(_ringload.read_passphrase_file(os.fspath(path)), opslimit, memlimit)

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

    @classmethod
    def from_key_file(cls, path: str) -> "DecryptionParams":
        """The raw key a file holds: exactly 32 bytes (the engine's rule, as the CLI's --key-file)."""
        from .. import _ringload
        return cls(_ringload.read_key_file(os.fspath(path)))

    @classmethod
    def from_passphrase_file(cls, path: str) -> "DecryptionParams":
        """The passphrase a file holds (one trailing newline dropped; not empty), as --passphrase-file."""
        from .. import _ringload
        return cls.from_string(_ringload.read_passphrase_file(os.fspath(path)))

    def __repr__(self) -> str:
        return f"DecryptionParams({'key' if self.key is not None else 'passphrase'})"


def secret_kwargs(params) -> dict:
    """The engine's key=/passphrase= for EncryptionParams, DecryptionParams (ringload's or
    tensorizer's) or None."""
    if params is None:
        return {}
    if isinstance(params, (EncryptionParams, DecryptionParams)):
        return {"key": params.key} if params.key is not None else {"passphrase": params._passphrase}
    return _tensorizers_secret(params)


def _tensorizers_secret(params) -> dict:
    """tensorizer's DecryptionParams (a key or a source string), or its EncryptionParams made from
    a key. Its EncryptionParams.from_string keeps only the derived key, not the passphrase, and
    a file that records a derivation needs the engine to derive the key itself."""
    key = getattr(params, "key", None)
    if getattr(params, "_algorithm", None) is not None:
        raise TypeError("tensorizer's EncryptionParams.from_string() cannot be used here: "
                        "use ringload.EncryptionParams.from_string() with the same arguments")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return {"key": bytes(key)}
    source = getattr(params, "source", None)
    if isinstance(source, bytes):
        source = source.decode(getattr(params, "encoding", None) or "utf-8")
    if isinstance(source, str) and source:
        return {"passphrase": source}
    raise TypeError(f"not encryption parameters: {type(params).__name__}")


def encryption_kwargs(params) -> dict:
    """secret_kwargs for a writer's EncryptionParams, with the Argon2id cost and salt of a passphrase."""
    kwargs = secret_kwargs(params)
    if isinstance(params, EncryptionParams) and params.key is None:
        kwargs.update(opslimit=params._opslimit, memlimit=params._memlimit, salt=params._salt)
    return kwargs
