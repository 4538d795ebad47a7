"""ringload.vllm_loader: vLLM's `--load-format ringload`.

The module is `ringload.servers.vllm` (the package's rooms: docs/architecture.md); this public name,
which vLLM's plugin entry point names, is that same module object, so that importing or patching
either is the same.
"""
import sys

from .servers import vllm as _module

sys.modules[__name__] = _module
