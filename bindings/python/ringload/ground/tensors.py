"""From the engine's DLPack arrays to torch tensors and numpy arrays, without copies.

torch and numpy take most dtypes straight through DLPack. The ones an installed version does
not know (bfloat16 for numpy; float8, complex32, bool in older torch) come as the raw bytes
(a flat uint8 array over the same memory) and are viewed as the right type.
"""
from __future__ import annotations

import math
from typing import Optional

from .. import _ringload

# numpy's names for the dtypes it has; the rest are opaque to numpy (tensorizer's word).
NUMPY_DTYPES = {
    "float64": "<f8", "float32": "<f4", "float16": "<f2", "int64": "<i8", "int32": "<i4", "int16": "<i2",
    "int8": "i1", "uint8": "u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "bool": "?",
    "complex64": "<c8", "complex128": "<c16",
}
# The engine's dtypes (ringload/dtype.hpp): name -> (itemsize, converted by a load's dtype=,
# safetensors' spelling or None).
_DTYPES = _ringload.dtypes()
ITEMSIZE = {name: size for name, (size, _, _) in _DTYPES.items()}
# safetensors' dtype spellings (get_dtype) for ringload's (torch's) names.
SAFETENSORS_DTYPES = {name: spelled for name, (_, _, spelled) in _DTYPES.items() if spelled}


def torch_dtype(name: str):
    import torch
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"this torch has no dtype {name}")
    return dtype


def to_torch(loaded, k: int, dtype: str, shape: tuple):
    """Tensor k of a load as torch: over the engine's memory, or, for a strided torch zip view,
    its contiguous copy made by torch (on the load's device)."""
    import torch
    strides = loaded.strides(k)
    try:
        tensor = loaded.array(k)  # a torch.Tensor over the engine's memory (DLPack underneath)
        if tensor.dtype == torch_dtype(dtype):
            return tensor if strides is None else tensor.contiguous()
    except (RuntimeError, TypeError, BufferError, ValueError):
        pass
    raw = loaded.array(k, raw=True)  # uint8 bytes, same memory
    if math.prod(shape) == 0:
        return torch.empty(shape, dtype=torch_dtype(dtype), device=raw.device)
    flat = raw.view(-1).view(torch_dtype(dtype))
    return flat.reshape(shape) if strides is None else flat.as_strided(shape, strides).contiguous()


def to_numpy(loaded, k: int, dtype: str, shape: tuple):
    """(array, is_opaque): an opaque dtype comes as void items of its width ("<V2" for bfloat16)."""
    import numpy
    strides = loaded.strides(k)
    if dtype in NUMPY_DTYPES:
        try:
            array = loaded.numpy_array(k)
            if array.dtype == numpy.dtype(NUMPY_DTYPES[dtype]):
                return (array if strides is None else numpy.ascontiguousarray(array)), False
        except (RuntimeError, TypeError, BufferError, ValueError):
            pass
    raw = loaded.numpy_array(k, raw=True)
    numpy_dtype = NUMPY_DTYPES.get(dtype, f"V{ITEMSIZE[dtype]}")
    items = raw.view(numpy_dtype)
    if strides is None:
        return items.reshape(shape), dtype not in NUMPY_DTYPES
    steps = tuple(step * items.itemsize for step in strides)
    return numpy.ascontiguousarray(numpy.lib.stride_tricks.as_strided(items, shape, steps)), dtype not in NUMPY_DTYPES


# Floating dtypes a load converts (dtype=); the others keep their stored type.
CONVERTIBLE = tuple(name for name, (_, converts, _) in _DTYPES.items() if converts)


def loaded_dtype(stored: str, wanted) -> str:
    """The dtype a tensor stored as `stored` has once loaded with dtype=`wanted` (a name or None)."""
    return wanted if wanted and stored in CONVERTIBLE else stored


def dtype_name(dtype) -> Optional[str]:
    """torch's dtype (or its name) as the engine names it ("float16"); None stays None."""
    if dtype is None:
        return None
    return str(dtype).replace("torch.", "")
