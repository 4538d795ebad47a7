"""safetensors.numpy's names over ringload: numpy arrays go through torch (no copy) to
ringload's save / load, and come back as numpy arrays. Only this adapter is the shim's."""
import numpy as np
import torch

import ringload


def _to_torch(tensors):
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, np.ndarray] but received {type(tensors)}")
    # safetensors stores little-endian: a big-endian array is converted first, as safetensors does.
    return {name: torch.from_numpy(np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"))))
            for name, array in tensors.items()}


def _to_numpy(tensors):
    return {name: tensor.numpy() for name, tensor in tensors.items()}


def save(tensor_dict, metadata=None):
    return ringload.save(_to_torch(tensor_dict), metadata=metadata)


def save_file(tensor_dict, filename, metadata=None):
    ringload.save_file(_to_torch(tensor_dict), filename, metadata=metadata)


def load(data):
    return _to_numpy(ringload.load(data))


def load_file(filename):
    return _to_numpy(ringload.load_file(filename))
