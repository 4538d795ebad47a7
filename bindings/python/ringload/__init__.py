"""ringload: load (and write) model weights as fast as the hardware allows.

A drop-in for tensorizer's Python API (change the import):

    from ringload import TensorDeserializer, TensorSerializer, EncryptionParams, DecryptionParams

and a drop-in for safetensors.torch (save_file, load_file, save, load, save_model, load_model,
safe_open, SafetensorError) that reads all three formats, from disk or a URL:

    tensors = ringload.load_file("model.safetensors")    # or a torch .pt/.bin, or .tensors
    with ringload.safe_open("s3://bucket/model.safetensors") as f:
        part = f.get_slice("wte.weight")[:1024]         # reads only that part

Tensors reach torch and numpy without copies (DLPack), on the CPU and on CUDA devices; the GIL
is released while the engine works. Failures raise ringload.errors classes.
"""
from .errors import (ArgumentError, CancelledError, DecryptionError, DeviceError, FormatError,  # noqa: F401
                     HashMismatchError, RingloadError, SafetensorError, SignatureError, SliceIndexError,
                     SourceError, SourceNotFoundError)
from .ground.crypto import DecryptionParams, EncryptionParams  # noqa: F401
from .dropin.deserializer import TensorDeserializer  # noqa: F401
from .dropin.serializer import TensorSerializer  # noqa: F401
from .dropin.files import convert, load, load_file, load_model, save, save_file, save_model  # noqa: F401
from .dropin.safe_open import safe_open  # noqa: F401
from .dropin.stream import stream_tensors  # noqa: F401
from .ground.signing import sign_model, verify_model  # noqa: F401
from .dropin.model_load import load_folder, stream_folder  # noqa: F401

__all__ = ["TensorDeserializer", "load_folder", "stream_folder", "TensorSerializer", "convert", "load_file", "save_file", "stream_tensors", "EncryptionParams", "DecryptionParams", "RingloadError",
           "FormatError", "HashMismatchError", "DecryptionError", "SourceError", "DeviceError", "CancelledError",
           "ArgumentError", "load", "save", "load_model", "save_model", "safe_open", "SafetensorError",
           "SourceNotFoundError", "SliceIndexError", "SignatureError", "verify_model", "sign_model"]
