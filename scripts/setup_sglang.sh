#!/usr/bin/env bash
# scripts/setup_sglang.sh: the .venv-sglang in which tests/bindings/sglang_test.py runs the real
# SGLang's model loading (CPU) with `--load-format ringload`, and tests/bindings/diffusers_test.py
# diffusers' from_pretrained with ringload's reads; called by scripts/test.sh after
# scripts/setup_vllm.sh, whose .venv-vllm it builds on:
#   - a venv of its own (/usr/bin/python3, 3.11: the extension's ABI) that sees .venv-vllm's
#     packages (torch 2.13, transformers, ...) through a .pth file, so that only SGLang and what
#     it imports beyond them are installed here (scripts/requirements-sglang.txt, --no-deps:
#     SGLang's metadata asks for CUDA kernels and a torch that PyPI's CPU machines do not need);
#   - about 0.5 GB and under a minute. Safe to run again: it installs only when a pin is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-sglang
base=.venv-vllm/lib/python3.11/site-packages
installed() {
    "$venv/bin/python" - <<'PY' 2>/dev/null
from importlib.metadata import version
assert version("sglang") == "0.5.23" and version("torch") == "2.13.0" and version("diffusers") == "0.42.1"
import sglang.srt.model_loader.loader  # noqa: F401 (everything it imports is there)
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
installed || { echo "setup: $venv cannot import SGLang's model loader" >&2; "$venv/bin/python" -c \
    "import sglang.srt.model_loader.loader" >&2 || true; exit 1; }
