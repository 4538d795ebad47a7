"""Tensors that share memory, as safetensors.torch finds them (for save_file's refusal and
save_model / load_model's dedup).

safetensors stores each tensor's bytes once and cannot express "b is a view of a": save_file
refuses tensors whose memory overlaps, and save_model keeps one name per shared storage (the
one covering it whole), recording the others in the metadata. These helpers follow
huggingface/safetensors bindings/python/py_src/safetensors/torch.py (Apache-2.0) so that the
same model gives the same choice of names, and keep its names (the upstream tests import them
from safetensors.torch).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Set


def _size_of(dtype) -> int:
    import torch
    return torch.empty((), dtype=dtype).element_size()


def storage_ptr(tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:
        try:
            return tensor.storage().data_ptr()
        except NotImplementedError:
            return 0  # meta storage


def storage_size(tensor) -> int:
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:
        try:
            return tensor.storage().size() * _size_of(tensor.dtype)
        except NotImplementedError:
            return tensor.nelement() * _size_of(tensor.dtype)  # meta storage


def end_ptr(tensor) -> int:
    if tensor.nelement():
        return tensor.view(-1)[-1].data_ptr() + _size_of(tensor.dtype)
    return tensor.data_ptr()


def _filter_shared_not_shared(tensors: List[Set[str]], state_dict) -> List[Set[str]]:
    """Splits each group of one storage into the names whose byte ranges really overlap."""
    filtered = []
    for shared in tensors:
        if len(shared) < 2:
            filtered.append(shared)
            continue
        areas = sorted((state_dict[name].data_ptr(), end_ptr(state_dict[name]), name) for name in shared)
        _, last_stop, last_name = areas[0]
        filtered.append({last_name})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                filtered.append({name})
            else:
                filtered[-1].add(name)
            last_stop = stop
    return filtered


def find_shared_tensors(state_dict) -> List[Set[str]]:
    import torch
    tensors = defaultdict(set)
    for name, tensor in state_dict.items():
        if tensor.device != torch.device("meta") and storage_ptr(tensor) != 0 and storage_size(tensor) != 0:
            tensors[(tensor.device, storage_ptr(tensor), storage_size(tensor))].add(name)
    return _filter_shared_not_shared(list(sorted(tensors.values())), state_dict)


def is_complete(tensor) -> bool:
    return (tensor.data_ptr() == storage_ptr(tensor)
            and tensor.nelement() * _size_of(tensor.dtype) == storage_size(tensor))


def remove_duplicate_names(state_dict, *, preferred_names: Optional[List[str]] = None,
                            discard_names: Optional[List[str]] = None) -> Dict[str, List[str]]:
    """For each shared group: the name kept (one covering the whole storage) -> the names dropped."""
    preferred_names = set(preferred_names or [])
    discard_names = set(discard_names or [])
    to_remove = defaultdict(list)
    for shared in find_shared_tensors(state_dict):
        complete_names = {name for name in shared if is_complete(state_dict[name])}
        if not complete_names:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no suitable name to keep"
                f" for saving amongst: {shared}. None is covering the entire storage.Refusing to save/load the model"
                " since you could be storing much more memory than needed. Please refer to"
                " https://huggingface.co/docs/safetensors/torch_shared_tensors for more information. Or open an"
                " issue.")
        keep_name = sorted(complete_names)[0]
        preferred = complete_names.difference(discard_names)
        if preferred:
            keep_name = sorted(preferred)[0]
        if preferred_names:
            preferred = preferred_names.intersection(complete_names)
            if preferred:
                keep_name = sorted(preferred)[0]
        for name in sorted(shared):
            if name != keep_name:
                to_remove[keep_name].append(name)
    return to_remove


def check_for_save(tensors) -> None:
    """safetensors' refusals before a write, with its exception types and words: not a dict, a
    value that is not a tensor, sparse tensors, tensors sharing memory, non-contiguous ones."""
    import torch
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    sparse = []
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(tensor)}")
        if tensor.layout != torch.strided:
            sparse.append(name)
    if sparse:
        raise ValueError(
            f"You are trying to save a sparse tensors: `{sparse}` which this library does not support."
            " You can make it a dense tensor before saving with `.to_dense()` but be aware this might"
            " make a much larger file than needed.")
    failing = [names for names in find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(
            f"""
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {failing}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """)
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means you"
                " are trying to save tensors which are reference of each other in which case it's recommended to save"
                " only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to"
                " pack it before saving.")
        if tensor.device.type == "meta":
            raise RuntimeError(f"Cannot copy out of meta tensor; tensor `{name}` has no data (meta device)")


def check_metadata(metadata) -> None:
    """safetensors takes a dict of str to str (a TypeError otherwise, as its binding raises)."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict of str to str, not {type(metadata).__name__}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"metadata must be a dict of str to str: {key!r}: {value!r} "
                            f"({type(key).__name__} to {type(value).__name__})")
