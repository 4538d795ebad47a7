// gpu/device_guard.hpp
//
// Makes a device current for a scope and gives the thread its previous device back after, so
// that a load to cuda:1 on the caller's thread does not move the caller's own CUDA work (torch's
// current device) to GPU 1.
//
//     DeviceGuard guard(ordinal);
//     if (guard.status() != cudaSuccess) { ... }
#pragma once

#include <cuda_runtime_api.h>

namespace ringload::gpu {

class DeviceGuard {
public:
    explicit DeviceGuard(int ordinal) {
        restore_ = cudaGetDevice(&previous_) == cudaSuccess && previous_ != ordinal;
        status_ = previous_ == ordinal && !restore_ ? cudaSuccess : cudaSetDevice(ordinal);
    }
    ~DeviceGuard() {
        if (restore_) {
            (void)cudaSetDevice(previous_);
        }
    }
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

    cudaError_t status() const noexcept { return status_; }

private:
    int previous_ = -1;
    bool restore_ = false;
    cudaError_t status_ = cudaSuccess;
};

} // namespace ringload::gpu
