#!/usr/bin/env bash
# tests/consumer/run_consumer_test.sh BUILD_DIR SOURCE_DIR DATA_DIR
# Installs ringload from BUILD_DIR into a temporary prefix, builds the consumer against it
# with find_package(ringload), and runs it on a fixture.
set -euo pipefail
build_dir=$1 source_dir=$2 data_dir=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$source_dir/tests/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
out=$("$work/build/consumer" "$data_dir/tensorizer/basic_v1.tensors")
echo "consumer printed: $out"
[ "$out" = "6 1152 embed.weight" ] || { echo "unexpected output"; exit 1; }
# The installed command works from the prefix too (its rpath finds libringload).
"$work/prefix/bin/ringload" info "$data_dir/tensorizer/tiny_v1.tensors" | grep -q "2 tensors"
echo "1 passed, 0 failed"
