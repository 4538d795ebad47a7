#!/usr/bin/env bash
# bench/setup_peers.sh: installs the peers `ringload bench load` compares against into .venv,
# from PyPI, pinned, so each runs from its real package. Called by scripts/setup.sh; safe to
# run again (installs only what is missing).
#   - runai-model-streamer: Run:ai's streamer (C++ readers; wheels for x86-64 glibc >= 2.30).
#   - fastsafetensors: IBM's loader (runs on the CPU too, without GPUDirect Storage).
#   - tensorizer and safetensors come with scripts/setup.sh; torch is Debian's python3-torch.
# --no-deps, as scripts/setup.sh does for tensorizer: runai-model-streamer declares
# torch>=2.0, which would pull a second torch over Debian's 1.13; its SafetensorsStreamer
# works with 1.13 (bench/peers/runai_streamer_peer.py, the bench smoke test). humanize is the
# one dependency the two import (fastsafetensors' typer is for its command line only).
set -euo pipefail
cd "$(dirname "$0")/.."
peer_packages=(
    runai-model-streamer==0.17.0 humanize==4.17.0 fastsafetensors==0.5.0
)
if ! .venv/bin/python -c "import runai_model_streamer, fastsafetensors" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check --no-deps "${peer_packages[@]}"
fi
