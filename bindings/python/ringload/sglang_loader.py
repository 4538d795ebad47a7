"""ringload.sglang_loader: SGLang's `--load-format ringload`.

The module is `ringload.servers.sglang` (the package's rooms: docs/architecture.md); this public
name, which SGLang's plugin entry point names, is that same module object, so that importing or
patching either is the same.
"""
import sys

from .servers import sglang as _module

sys.modules[__name__] = _module
