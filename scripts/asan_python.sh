#!/usr/bin/env bash
# scripts/asan_python.sh: the Python binding under ASan+UBSan. Builds the extension module
# instrumented (build/asan-python; the engine and the API code with it), then runs the Python
# test suites with the sanitizer runtimes preloaded into the (uninstrumented) interpreter:
# every load, write, DLPack hand-off and close in them is checked for use-after-free, overflows
# and undefined behaviour. Leak checking is off: CPython and torch keep their allocations at
# exit by design; the suites' own RSS test (100 deserializers) covers leaks of ours.
# Not part of scripts/test.sh (a fourth full build would push CI past its time limit).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh > /dev/null
build=build/asan-python
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRINGLOAD_SANITIZE=address -DRINGLOAD_WITH_CUDA=OFF \
    -DRINGLOAD_WITH_PYTHON=ON -DRINGLOAD_BUILD_TESTS=OFF -DRINGLOAD_BUILD_BENCH=OFF > /dev/null
cmake --build "$build" -j2 --target _ringload
runtimes="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export LD_PRELOAD=$runtimes
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PYTHONPATH=$build/bindings/python RINGLOAD_TEST_DATA=tests/data
.venv/bin/python -m pytest -q -p no:cacheprovider tests/bindings/python_api_test.py tests/bindings/formats_python_test.py
