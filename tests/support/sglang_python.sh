#!/usr/bin/env bash
# tests/support/sglang_python.sh ARGS...: runs ARGS with the python of .venv-sglang, the venv of
# PyPI's SGLang on top of .venv-vllm (scripts/setup_sglang.sh). Exits 77 (skipped, saying why)
# where that venv has not been made: scripts/test.sh always makes it, and a skip fails its run.
python="$(dirname "$0")/../../.venv-sglang/bin/python"
if [ ! -x "$python" ]; then
    echo "SKIP: no .venv-sglang (SGLang): run scripts/setup_sglang.sh"
    exit 77
fi
exec "$python" "$@"
