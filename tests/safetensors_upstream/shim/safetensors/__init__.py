"""A stand-in `safetensors` package whose names are ringload's, so that safetensors' own tests
run against ringload unchanged (tests/safetensors_upstream/run.py puts this folder first on
PYTHONPATH). Nothing here reimplements safetensors: each name is ringload's function.

TensorSpec / serialize / deserialize / serialize_file are safetensors' low-level byte API
(0.8), which ringload has no counterpart for: they raise, and the one test that calls them is
skipped with that reason (conftest.py).
"""
from ringload import SafetensorError, safe_open  # noqa: F401

__version__ = "ringload-shim"


def _not_here(*args, **kwargs):
    raise NotImplementedError("safetensors' low-level serialize API (TensorSpec, serialize, deserialize) "
                              "has no ringload counterpart; use save / load / save_file")


TensorSpec = serialize = deserialize = serialize_file = _not_here
