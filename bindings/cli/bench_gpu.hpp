// bindings/cli/bench_gpu.hpp
//
// The pinned host<->device copy rates of GPU 0 (cudaMemcpyAsync of 256 MiB from page-locked
// memory, the best of a few), the bound of a load to the GPU. Built from bench_gpu_cuda.cpp
// with a CUDA toolkit, else bench_gpu_none.cpp, which says so.
#pragma once

#include "ringload/error.hpp"

#include <string>

namespace ringload::cli {

struct GpuCopyRates {
    std::string device_name;
    double host_to_device_gb_per_s = 0;
    double device_to_host_gb_per_s = 0;
};

// Fails with the reason there is no number: no toolkit at build time, no GPU, no driver.
Result<GpuCopyRates> measure_gpu_copy_rates();

} // namespace ringload::cli
