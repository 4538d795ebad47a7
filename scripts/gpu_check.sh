#!/usr/bin/env bash
# scripts/gpu_check.sh [BUILD_DIR]
#
# Every check the GPU issue needs, in one command, on a machine with an NVIDIA GPU:
#   1. the gpu-labelled tests (every fixture to cuda:0 against its manifest, dtype kernels
#      against the CPU path, caller destinations, writing a model from the GPU), then the
#      Python package's (tests/bindings/python_cuda_test.py);
#   2. the same load tests under compute-sanitizer memcheck, racecheck and initcheck;
#   3. bench/gpu_load.sh (hot cache vs pinned H2D, cold cache vs O_DIRECT, peak RSS), then
#      bench/gpu_python_load.py (ringload vs safetensors' own cuda load, hot and cold);
#   1d. straight into CUDA parameters (tests/bindings/parameter_load_test.py -k cuda);
#   3b. bench/transformers_load.py on cuda (transformers' own from_pretrained vs ringload's
#      reads, hot and cold, with the extra device memory each holds), where transformers is;
#   3c. bench/parameters_load.py: a vLLM-shaped stand-in whose parameters are made on the GPU
#      first, loaded by safetensors (CPU, then copied), safetensors to the device (then copied
#      device to device) and ringload straight into them, hot and cold;
#   4. `ringload bench` on the GPU (issue #7): the pinned-copy limits, and the load of a
#      synthetic GPT-2 XL (GPU_BENCH_MODEL to use another) to cuda with ringload and every peer
#      installed here, with peak device memory per system (gpu-*.json, gpu-load.png).
# Without BUILD_DIR it sets up (scripts/setup.sh) and builds the release preset first. A build
# made elsewhere can be given instead (scripts/gpu_bundle.sh packs one with its libraries), with
# RINGLOAD_TEST_DATA_DIR pointing at tests/data when the sources moved.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-}
if [ -z "$build" ]; then
    ./scripts/setup.sh
    cmake --preset release > /dev/null
    cmake --build --preset release
    build=build/release
fi
export RINGLOAD_TEST_DATA_DIR=${RINGLOAD_TEST_DATA_DIR:-$PWD/tests/data}
# Released slots are overwritten: a slot given back before its DMA finished fails the tests.
export RINGLOAD_POISON_SLOTS=1
tests=$build/tests/gpu_tests
nvidia-smi || { echo "gpu_check: no NVIDIA GPU answers here"; exit 1; }

echo "=== 1. gpu tests"
"$tests" --gtest_brief=1

echo "=== 1b. the Python package on the GPU (needs this machine's torch with CUDA)"
status=0
PYTHONPATH=$build/bindings/python RINGLOAD_TEST_DATA=$RINGLOAD_TEST_DATA_DIR \
    "${PYTHON:-python3}" tests/bindings/python_cuda_test.py || status=$?
[ $status = 0 ] || [ $status = 77 ] || exit $status

echo "=== 1c. read once per group with the tensors on the GPU (NCCL with a GPU per rank, else gloo)"
RINGLOAD_DISTRIBUTED_DEVICE=cuda PYTHONPATH=$build/bindings/python RINGLOAD_TEST_DATA=$RINGLOAD_TEST_DATA_DIR \
    "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider tests/bindings/distributed_test.py -k "not http"

echo "=== 1d. straight into CUDA parameters (issue #37: whole tensors from the ring, rows uploaded)"
PYTHONPATH=$build/bindings/python "${PYTHON:-python3}" -m pytest -q -rs -p no:cacheprovider \
    tests/bindings/parameter_load_test.py -k cuda

echo "=== 2. compute-sanitizer (memcheck, racecheck, initcheck) on the load tests"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
filter='GpuLoad.EveryFixture*:GpuLoad.Conversion*:GpuLoad.CallerDestinations*'
for tool in memcheck racecheck initcheck; do
    "$sanitizer" --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter="$filter" --gtest_brief=1
done

echo "=== 3. benchmarks"
RINGLOAD_POISON_SLOTS=0 ./bench/gpu_load.sh "$build" "${GPU_BENCH_FILE:-}"
if "${PYTHON:-python3}" -c "import safetensors" 2>/dev/null; then # from Python, against safetensors' own
    synthetic=$build/gpt2-xl-fp16.safetensors
    [ -f "$synthetic" ] || { "$build/bench/ringload-synth" --shape gpt2-xl --dtype float16 "$synthetic.tensors" &&
        "$build/bindings/cli/ringload" convert "$synthetic.tensors" "$synthetic" && rm "$synthetic.tensors"; }
    PYTHONPATH=$build/bindings/python "${PYTHON:-python3}" bench/gpu_python_load.py "$synthetic" --runs 3
    PYTHONPATH=$build/bindings/python "${PYTHON:-python3}" bench/gpu_python_load.py "$synthetic" --runs 2 --cold || true
fi

echo "=== 3b. transformers' from_pretrained(device_map=\"cuda\") alone vs with ringload's reads (issue #37)"
if "${PYTHON:-python3}" -c "import transformers" 2>/dev/null; then # 3+ GB: 24 layers x 2048, bfloat16
    for cache in hot cold; do
        PYTHONPATH=$build/bindings/python "${PYTHON:-python3}" bench/transformers_load.py --layers 24 --hidden 2048 \
            --dtype bfloat16 --device cuda --cache "$cache" --runs 3 || true
    done
fi

echo "=== 3c. a vLLM-shaped stand-in on the GPU, its parameters made first (issue #37), hot and cold"
for cache in hot cold; do # 3.2 GB: 24 layers x 2048, bfloat16
    PYTHONPATH=$build/bindings/python "${PYTHON:-python3}" bench/parameters_load.py --device cuda \
        --cache "$cache" --runs 3 || true
done

echo "=== 4. ringload bench on the GPU"
ringload=$build/bindings/cli/ringload
model=${GPU_BENCH_MODEL:-demo/gpt2-xl.tensors}
mkdir -p "$(dirname "$model")"
[ -f "$model" ] || "$ringload" bench model --shape gpt2-xl "$model"
"$ringload" bench limits --file "$model" --only gpu --json gpu-limits.json
"$ringload" bench load "$model" --device cuda --work-dir "$(dirname "$model")" --json gpu-load.json --png gpu-load.png
