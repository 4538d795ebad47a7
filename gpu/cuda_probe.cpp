// gpu/cuda_probe.cpp
#include "gpu/cuda_probe.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace ringload::gpu {

Result<int> cuda_device_count() {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        return fail(errc::unsupported, std::string("no usable CUDA device: ") + cudaGetErrorString(status));
    }
    if (count == 0) {
        return fail(errc::unsupported, "no CUDA device present");
    }
    return count;
}

} // namespace ringload::gpu
