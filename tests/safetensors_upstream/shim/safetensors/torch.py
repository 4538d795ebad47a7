"""safetensors.torch's names, as ringload's functions (and its shared-tensor helpers, which
the upstream tests import by their private names)."""
from ringload import load, load_file, load_model, safe_open, save, save_file, save_model  # noqa: F401
from ringload.dropin.shared import end_ptr as _end_ptr  # noqa: F401
from ringload.dropin.shared import find_shared_tensors as _find_shared_tensors  # noqa: F401
from ringload.dropin.shared import is_complete as _is_complete  # noqa: F401
from ringload.dropin.shared import remove_duplicate_names as _remove_duplicate_names  # noqa: F401
from ringload.dropin.shared import storage_ptr, storage_size  # noqa: F401
