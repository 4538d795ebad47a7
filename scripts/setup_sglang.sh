#!/usr/bin/env bash
# scripts/setup_sglang.sh: the .venv-sglang in which tests/bindings/sglang_test.py runs the real
# SGLang's model loading (CPU) with `--load-format ringload`, and tests/bindings/diffusers_test.py
# diffusers' from_pretrained with ringload's reads; called by scripts/test.sh after
# scripts/setup_vllm.sh, whose .venv-vllm it builds on:
#   - a venv of its own (/usr/bin/python3, 3.11: the extension's ABI) that sees .venv-vllm's
#     packages (torch 2.13, transformers, ...) through a .pth file, so that only SGLang and what
#     it imports beyond them are installed here (scripts/requirements-sglang.txt, --no-deps:
#     SGLang's metadata asks for CUDA kernels and a torch that PyPI's CPU machines do not need);
#   - the pure-Python modules of sglang-kernel (SGLang's kernels, whose compiled ops need libcuda),
#     with a stub for the compiled module: SGLang's CPU engine (SGLANG_USE_CPU_ENGINE=1, the
#     torch_native attention backend) then generates here, and a compiled kernel call raises
#     rather than computes (tests/bindings/sglang_generate_test.py);
#   - about 0.5 GB and under a minute. Safe to run again: it installs only when a pin is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-sglang
base=.venv-vllm/lib/python3.11/site-packages
installed() {
    "$venv/bin/python" - <<'PY' 2>/dev/null
from importlib.metadata import version
assert version("sglang") == "0.5.23" and version("torch") == "2.13.0" and version("diffusers") == "0.42.1"
assert version("sglang-kernel") == "0.4.10"
import sglang.srt.model_loader.loader  # noqa: F401 (everything it imports is there)
import sgl_kernel  # noqa: F401 (its Python modules, the stub for its compiled ops)
PY
}
[ -d "$base" ] || { echo "setup: $venv needs .venv-vllm (scripts/setup_vllm.sh) first" >&2; exit 1; }
if [ -x "$venv/bin/python" ] && installed; then
    exit 0
fi
echo "setup: making $venv (SGLang on top of .venv-vllm)"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -c "import site, sys; print(site.getsitepackages()[0])" | {
    read -r own
    echo "$(pwd)/$base" > "$own/ringload-venv-vllm.pth"
}
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r scripts/requirements-sglang.txt
# sglang-kernel 0.4.10 (SGLang 0.5.23's pin): its Python modules and metadata only. load_utils
# falls back to `import common_ops` where no compiled module is there: the stub registers no op,
# so SGLang's CPU paths (which ask torch.ops.sgl_kernel for each op first) take torch's.
site=$("$venv/bin/python" -c "import site; print(site.getsitepackages()[0])")
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$wheels" \
    sglang-kernel==0.4.10
"$venv/bin/python" - "$wheels"/sglang_kernel-0.4.10-*.whl "$site" <<'PY'
import sys, zipfile
wheel, site = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if (name.startswith("sgl_kernel/") and name.endswith(".py")) or name == "sglang_kernel-0.4.10.dist-info/METADATA":
            archive.extract(name, site)
PY
echo pip > "$site/sglang_kernel-0.4.10.dist-info/INSTALLER"
: > "$site/sglang_kernel-0.4.10.dist-info/RECORD"
cat > "$site/common_ops.py" <<'PY'
"""A stub for sgl_kernel's compiled common_ops (its CUDA build needs libcuda; not installed): it
registers no op, so a torch.ops.sgl_kernel.* call raises where it is made (scripts/setup_sglang.sh)."""
PY
installed || { echo "setup: $venv cannot import SGLang's model loader" >&2; "$venv/bin/python" -c \
    "import sglang.srt.model_loader.loader" >&2 || true; exit 1; }
