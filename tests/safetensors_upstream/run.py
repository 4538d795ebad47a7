"""Runs safetensors' own torch tests (copied unchanged from huggingface/safetensors, see
README.md) against ringload: the shim/ folder makes `safetensors` and `safetensors.torch`
ringload's names. The tests write to ./tests/data and ./, so they run in a fresh folder.

    PYTHONPATH=<build>/bindings/python .venv/bin/python tests/safetensors_upstream/run.py

Exit status: pytest's (77, a skip, without torch or ringload).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = ["test_pt_comparison.py", "test_simple.py", "test_pt_model.py"]
# The skips safetensors' tests may make here beyond a missing GPU (tests/support/strict_skips.py):
# other accelerators (Apple's MPS, Intel's HPU, Huawei's NPU) or a second device; what torch 1.13
# lacks (set_default_device, the float8/float4 dtypes: the torch 2 run,
# safetensors_upstream_torch2, runs those tests); and test_exception, which tests safetensors'
# low-level byte API (TensorSpec, serialize), which ringload does not offer (the shim skips it).
ALLOWED_SKIPS = ["--allow-skip", r"^(MPS|HPU|Npu|Mlu|XPU) is not available",
                 "--allow-skip", r"^Only 1 device available",
                 "--allow-skip", r"^torch 1\.13\S* has no torch\.",
                 "--allow-skip", r"^safetensors' low-level byte API \(TensorSpec, serialize\) has no ringload"]


def main() -> int:
    try:
        import ringload  # noqa: F401
        import torch  # noqa: F401
    except ImportError as error:
        print(f"skipped: {error}")
        return 77
    env = dict(os.environ)
    paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    support = os.path.join(HERE, "..", "support")  # strict_skips
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "shim"), *paths, os.path.abspath(support)])
    with tempfile.TemporaryDirectory(prefix="safetensors-upstream-") as work:
        os.makedirs(os.path.join(work, "tests", "data"))
        command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "strict_skips",
                   *ALLOWED_SKIPS, "--rootdir", HERE, *sys.argv[1:], *(os.path.join(HERE, name) for name in TESTS)]
        return subprocess.call(command, cwd=work, env=env)


if __name__ == "__main__":
    sys.exit(main())
