// gpu/cuda_error.hpp
//
// A CUDA runtime status as a ringload error that names the call and the device.
#pragma once

#include "ringload/error.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace ringload::gpu {

inline Error cuda_error(const std::string& where, const char* call, cudaError_t status) {
    return Error{errc::device_error, where + ": " + call + " failed: " + cudaGetErrorName(status) + " (" +
                                         cudaGetErrorString(status) + ")"};
}

} // namespace ringload::gpu
