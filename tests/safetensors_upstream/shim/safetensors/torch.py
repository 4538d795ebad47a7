"""safetensors.torch's names, as ringload's functions (and its shared-tensor helpers, which
the upstream tests import by their private names)."""
from ringload import load, load_file, load_model, safe_open, save, save_file, save_model  # noqa: F401
from ringload._shared import (_end_ptr, _find_shared_tensors, _is_complete,  # noqa: F401
                              _remove_duplicate_names, storage_ptr, storage_size)
