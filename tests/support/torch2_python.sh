#!/usr/bin/env bash
# tests/support/torch2_python.sh ARGS...: runs ARGS with the python of .venv-vllm, the venv of
# PyPI's torch 2.x (scripts/setup_vllm.sh; no system site packages), so that the Python tests
# run under today's torch as well as under the .venv's Debian torch 1.13 (issue #28). Exits 77
# (skipped, saying why) where that venv has not been made: scripts/test.sh always makes it.
python="$(dirname "$0")/../../.venv-vllm/bin/python"
if [ ! -x "$python" ]; then
    echo "SKIP: no .venv-vllm (torch 2.x): run scripts/setup_vllm.sh"
    exit 77
fi
exec "$python" "$@"
