// bindings/cli/bench_gpu_cuda.cpp: pinned copy rates with the CUDA runtime.
#include "bench_gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

namespace ringload::cli {
namespace {

constexpr std::size_t copy_bytes = 256 << 20;
constexpr int rounds = 5;

Error cuda_error(const char* what, cudaError_t status) {
    return fail(errc::unsupported, std::string(what) + ": " + cudaGetErrorString(status));
}

// The best of `rounds` timed copies (events on the stream), in GB/s.
Result<double> best_copy(void* target, const void* source, cudaMemcpyKind kind, cudaStream_t stream) {
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    double best = 0;
    for (int i = 0; i < rounds; ++i) {
        cudaEventRecord(start, stream);
        cudaMemcpyAsync(target, source, copy_bytes, kind, stream);
        cudaEventRecord(stop, stream);
        if (cudaError_t status = cudaEventSynchronize(stop); status != cudaSuccess) {
            cudaEventDestroy(start);
            cudaEventDestroy(stop);
            return cuda_error("cudaMemcpyAsync", status);
        }
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        best = std::max(best, static_cast<double>(copy_bytes) / (ms / 1e3) / 1e9);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return best;
}

} // namespace

Result<GpuCopyRates> measure_gpu_copy_rates() {
    int count = 0;
    if (cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess || count == 0) {
        return status != cudaSuccess ? cuda_error("no GPU", status) : fail(errc::unsupported, "no GPU");
    }
    cudaDeviceProp properties{};
    cudaGetDeviceProperties(&properties, 0);
    GpuCopyRates rates;
    rates.device_name = properties.name;
    void* host = nullptr;
    void* device = nullptr;
    cudaStream_t stream = nullptr;
    if (cudaError_t status = cudaMallocHost(&host, copy_bytes); status != cudaSuccess) {
        return cuda_error("cudaMallocHost", status);
    }
    cudaError_t status = cudaMalloc(&device, copy_bytes);
    if (status == cudaSuccess) {
        status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    }
    Result<double> h2d = cuda_error("cudaMalloc", status);
    Result<double> d2h = h2d;
    if (status == cudaSuccess) {
        h2d = best_copy(device, host, cudaMemcpyHostToDevice, stream);
        d2h = best_copy(host, device, cudaMemcpyDeviceToHost, stream);
        cudaStreamDestroy(stream);
    }
    cudaFree(device);
    cudaFreeHost(host);
    if (!h2d) {
        return h2d.error();
    }
    if (!d2h) {
        return d2h.error();
    }
    rates.host_to_device_gb_per_s = *h2d;
    rates.device_to_host_gb_per_s = *d2h;
    return rates;
}

} // namespace ringload::cli
