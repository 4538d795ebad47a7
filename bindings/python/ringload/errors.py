"""ringload.errors: the exceptions ringload raises, each carrying the engine's message (which
names the file or URL and what is wrong).

    RingloadError                 every failure of the engine
    ├── SafetensorError           what safetensors raises as SafetensorError (safe_open's refusals)
    │   ├── FormatError           not a tensorizer file, a bad header, a truncated file
    │   └── SliceIndexError (IndexError)  get_slice(...)[...] out of range
    ├── HashMismatchError         a stored CRC32 or SHA-256 does not match (verify_hash=True)
    ├── DecryptionError           no key, a wrong key or passphrase, a key for a plain file
    ├── SourceError (OSError)     the file or URL cannot be read (I/O, network)
    │   └── SourceNotFoundError (FileNotFoundError)  no such file, object or key
    ├── DeviceError               a GPU call failed
    ├── CancelledError            a progress callback raised, and the load stopped
    └── ArgumentError (ValueError) an option the engine refuses
"""


class RingloadError(Exception):
    """A failure of the ringload engine; str(error) says where and what."""


class SafetensorError(RingloadError):
    """safetensors' error class, for the drop-in: a slice out of range, a closed safe_open, a
    missing tensor, a bad header (FormatError is one)."""


class FormatError(SafetensorError):
    """The bytes are not a (valid, complete) tensorizer file."""


class HashMismatchError(RingloadError):
    """A tensor's stored hash does not match its bytes."""


class DecryptionError(RingloadError):
    """The file cannot be decrypted with what was given (or needs nothing)."""


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
           "HashMismatchError", "DecryptionError", "SourceError", "DeviceError", "CancelledError", "ArgumentError"]
