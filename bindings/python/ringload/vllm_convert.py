"""ringload.vllm_convert: a Hugging Face model folder's weights as one file for `--load-format ringload`.

The module is `ringload.servers.vllm_convert` (the package's rooms: docs/architecture.md); this
public name, which users run with `python -m`, is that same module object, so that importing or
patching either is the same.
"""
import sys

from .servers import vllm_convert as _module

if __name__ == "__main__":  # python -m ringload.vllm_convert
    sys.exit(_module.main())
sys.modules[__name__] = _module
