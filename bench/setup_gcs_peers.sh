#!/usr/bin/env bash
# bench/setup_gcs_peers.sh: makes .venv-gcs-bench, the venv bench/gcs_load.py runs in: Debian's
# python3 with the system's site-packages (numpy, torch 1.13 for the Python binding) and, from
# PyPI, the peers pinned in bench/requirements-gcs-peers.txt (google-cloud-storage, gcsfs,
# fsspec, Run:ai's streamer with its GCS plugin). Safe to run again (installs only what is
# missing). The emulator, fake-gcs-server, comes from scripts/setup.sh (.venv-moto).
#
#   bench/setup_gcs_peers.sh && \
#   PYTHONPATH=build/release/bindings/python .venv-gcs-bench/bin/python bench/gcs_load.py --runs 3
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-gcs-bench
requirements=bench/requirements-gcs-peers.txt
if [ ! -x "$venv/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    echo '*' > "$venv/.gitignore"  # as Python 3.13's venv does: git leaves the venv alone
fi
if ! "$venv/bin/python" -c "import google.cloud.storage, gcsfs, fsspec, runai_model_streamer, runai_model_streamer_gcs" \
        2>/dev/null; then
    pip=("$venv/bin/pip" install -q --disable-pip-version-check)
    "${pip[@]}" $(grep -v '^#' "$requirements" | grep -v 'no-deps' | sed 's/#.*//')
    "${pip[@]}" --no-deps $(grep 'no-deps' "$requirements" | grep -v '^#' | sed 's/#.*//')
fi
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
for name in ("google-cloud-storage", "gcsfs", "fsspec", "runai-model-streamer", "runai-model-streamer-gcs"):
    print(f"{name} {m.version(name)}")
PY
