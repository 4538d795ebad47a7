#!/usr/bin/env bash
# tests/consumer_torch/run_consumer_torch_test.sh BUILD_DIR SOURCE_DIR DATA_DIR TORCH_DIR
# Installs ringload (with ringload::torch) from BUILD_DIR into a temporary prefix, builds the
# consumer against it with find_package(Torch) + find_package(ringload COMPONENTS torch), runs it
# on a fixture and checks each tensor's sha256 and dtype against the fixture's manifest.
set -euo pipefail
build_dir=$1 source_dir=$2 data_dir=$3 torch_dir=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
[ -f "$work/prefix/include/ringload/torch.hpp" ] || { echo "ringload/torch.hpp not installed"; exit 1; }
cmake -S "$source_dir/tests/consumer_torch" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DTorch_DIR="$torch_dir" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
fixture="$data_dir/tensorizer/basic_v1.tensors"
mkdir "$work/out"
"$work/build/consumer_torch" "$fixture" "$work/out" > "$work/printed.txt"
cat "$work/printed.txt" | cut -c1-100
python3 - "$work/printed.txt" "$fixture.json" <<'PY'
import hashlib, json, sys
printed = open(sys.argv[1]).read().splitlines()
manifest = json.load(open(sys.argv[2]))
want = [(t["name"], t["dtype"].removeprefix("torch."), t["sha256"]) for t in manifest["tensors"]]
got = [(n, d, hashlib.sha256(bytes.fromhex(h)).hexdigest()) for n, d, h in (l.split(" ") for l in printed[:-2])]
assert got == want, f"tensors differ from the manifest:\n{got}\n{want}"
n = len(want)
assert printed[-2:] == [f"round trip safetensors {n}", f"round trip torch {n}"], printed[-2:]
print(f"{n} tensors match the manifest; both round trips equal")
PY
echo "1 passed, 0 failed"
