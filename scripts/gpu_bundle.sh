#!/usr/bin/env bash
# scripts/gpu_bundle.sh BUILD_DIR OUT_DIR
#
# Packs what scripts/gpu_check.sh runs (the gpu tests, the GPU benchmark and its helpers, the
# CLI, libringload) with the shared libraries they need beyond glibc and libstdc++, stripped,
# into OUT_DIR laid out like a build directory, for a GPU machine that has a driver but not
# this project's Debian packages (and no network to get them):
#   scripts/gpu_bundle.sh build/release .gpu-bundle     # here
#   LD_LIBRARY_PATH=.gpu-bundle/lib scripts/gpu_check.sh .gpu-bundle   # there
set -euo pipefail
build=$1 out=$2
rm -rf "$out"
mkdir -p "$out/tests" "$out/bench" "$out/bindings/cli" "$out/lib"
copy() { cp -L "$build/$1" "$out/$1"; strip --strip-debug "$out/$1" 2>/dev/null || true; }
copy tests/gpu_tests
for tool in ringload-gpu-bench ringload-rawread ringload-synth ringload-warm-ram; do copy "bench/$tool"; done
copy bindings/cli/ringload
for binary in "$out"/tests/gpu_tests "$out"/bench/ringload-gpu-bench "$out"/bindings/cli/ringload; do
    ldd "$binary" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt)\.so' |
    while read -r library; do cp -L "$library" "$out/lib/"; strip --strip-debug "$out/lib/$(basename "$library")"; done
du -sh "$out"
