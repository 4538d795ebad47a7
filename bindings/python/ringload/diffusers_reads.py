"""ringload.diffusers_reads: diffusers' from_pretrained with ringload doing the reads.

The module is `ringload.reads.diffusers` (the package's rooms: docs/architecture.md); this public
name, which users import, is that same module object, so that importing or patching either is the
same.
"""
import sys

from .reads import diffusers as _module

sys.modules[__name__] = _module
