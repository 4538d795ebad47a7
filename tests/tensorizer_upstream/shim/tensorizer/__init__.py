"""A stand-in `tensorizer` package whose TensorSerializer, TensorDeserializer, EncryptionParams and
DecryptionParams are ringload's, so that tensorizer's own tests run against ringload unchanged
(tests/tensorizer_upstream/run.py puts this folder first on PYTHONPATH). Everything else is the
real tensorizer, which must be installed: its folder is appended to this package's __path__, so
`tensorizer.serialization`, `tensorizer.stream_io`, `tensorizer.utils`, `tensorizer._crypt`, ...
are its own modules (tensorizer.serialization keeps tensorizer's classes: only the top-level
names a user imports are ringload's).
"""
import importlib.machinery
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_real = importlib.machinery.PathFinder.find_spec(
    "tensorizer", [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(_here)])
if _real is None or not _real.submodule_search_locations:
    raise ImportError("the tensorizer shim needs the real tensorizer installed beside it")
__path__.extend(_real.submodule_search_locations)

from . import serialization, stream_io, torch_compat, utils  # noqa: E402
from ._version import __version__  # noqa: E402
from .serialization import *  # noqa: E402,F401,F403
from ringload import DecryptionParams, EncryptionParams, TensorDeserializer, TensorSerializer  # noqa: E402,F401

__all__ = [*serialization.__all__, "stream_io", "torch_compat", "utils", "protobuf", "tensors_pb2"]
