"""ringload.errors: the exceptions ringload raises, each carrying the engine's message (which
names the file or URL and what is wrong).

    RingloadError                 every failure of the engine
    ├── SafetensorError           what safetensors raises as SafetensorError (safe_open's refusals)
    │   ├── FormatError           not a tensorizer file, a bad header, a truncated file
    │   └── SliceIndexError (IndexError)  get_slice(...)[...] out of range
    ├── HashMismatchError         a stored CRC32 or SHA-256 does not match (verify_hash=True)
    ├── SignatureError            a model signature that does not verify, or lists other files
    ├── DecryptionError           no key, a wrong key or passphrase, a key for a plain file
    ├── SourceError (OSError)     the file or URL cannot be read (I/O, network)
    │   └── SourceNotFoundError (FileNotFoundError)  no such file, object or key
    ├── DeviceError               a GPU call failed
    ├── CancelledError            a progress callback raised, and the load stopped
    └── ArgumentError (ValueError) an option the engine refuses

Where the program has imported tensorizer, a HashMismatchError raised is also tensorizer's
HashMismatchError and a DecryptionError also its CryptographyError, so that code written for
tensorizer catches ringload's failures as it caught tensorizer's. (They become so as they are
raised: ringload never imports tensorizer itself, and code that catches tensorizer's classes
has imported it.)
"""
import sys


class RingloadError(Exception):
    """A failure of the ringload engine; str(error) says where and what."""


class SafetensorError(RingloadError):
    """safetensors' error class, for the drop-in: a slice out of range, a closed safe_open, a
    missing tensor, a bad header (FormatError is one)."""


class FormatError(SafetensorError):
    """The bytes are not a (valid, complete) tensorizer file."""


class _AlsoTensorizers(type):
    """Makes each new error also an instance of tensorizer's class of the same meaning
    (`_tensorizer_class`, a name in tensorizer.serialization) when tensorizer is imported: the
    instance is of a subclass of both, made once."""

    def __call__(cls, *args, **kwargs):
        return type.__call__(cls._flavoured(), *args, **kwargs)

    def _flavoured(cls):
        serialization = sys.modules.get("tensorizer.serialization")
        theirs = getattr(serialization, getattr(cls, "_tensorizer_class", ""), None)
        if not isinstance(theirs, type) or issubclass(cls, theirs):
            return cls
        made = cls.__dict__.get("_with_tensorizers")
        if made is None or not issubclass(made, theirs):
            made = _AlsoTensorizers(cls.__name__, (cls, theirs), {
                "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                "__reduce__": lambda error: (cls, error.args)})  # unpickled: made again, where it lands
            cls._with_tensorizers = made
        return made


class HashMismatchError(RingloadError, metaclass=_AlsoTensorizers):
    """A tensor's stored hash does not match its bytes (also tensorizer's HashMismatchError
    where tensorizer is imported)."""
    _tensorizer_class = "HashMismatchError"


class SignatureError(RingloadError):
    """A model signature (OpenSSF Model Signing) that does not verify with the key or
    certificates given, or whose statement lists files other than the folder holds."""


class DecryptionError(RingloadError, metaclass=_AlsoTensorizers):
    """The file cannot be decrypted with what was given (or needs nothing); also tensorizer's
    CryptographyError where tensorizer is imported."""
    _tensorizer_class = "CryptographyError"


class SourceError(RingloadError, OSError):
    """The file or URL cannot be read."""


class SliceIndexError(SafetensorError, IndexError):
    """An index out of range in get_slice(...)[...], with recent safetensors' words; an
    IndexError too, as torch's indexing (and safetensors 0.4) raises."""


class SourceNotFoundError(SourceError, FileNotFoundError):
    """The file, object or key does not exist (FileNotFoundError, as safetensors raises)."""


class DeviceError(RingloadError):
    """A GPU call failed."""


class CancelledError(RingloadError):
    """The load was stopped (a progress callback raised)."""


class ArgumentError(RingloadError, ValueError):
    """An argument the engine refuses."""


__all__ = ["RingloadError", "SafetensorError", "SliceIndexError", "SourceNotFoundError", "FormatError",
           "HashMismatchError", "SignatureError", "DecryptionError", "SourceError", "DeviceError", "CancelledError",
           "ArgumentError"]
