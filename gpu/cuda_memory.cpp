// gpu/cuda_memory.cpp
#include "gpu/cuda_error.hpp"
#include "gpu/device_guard.hpp"
#include "gpu/device_memory.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace ringload::gpu {

Result<std::shared_ptr<std::byte>> allocate_device_memory(int ordinal, std::size_t length_bytes) {
    const std::string where = "cuda:" + std::to_string(ordinal);
    DeviceGuard guard(ordinal); // the caller's thread keeps its own current device
    cudaError_t status = guard.status();
    if (status != cudaSuccess) {
        return cuda_error(where, "cudaSetDevice", status);
    }
    void* memory = nullptr;
    status = cudaMalloc(&memory, std::max<std::size_t>(length_bytes, 1));
    if (status != cudaSuccess) {
        Error error = cuda_error(where, "cudaMalloc", status);
        error.detail += " for " + std::to_string(length_bytes) + " bytes";
        if (status == cudaErrorMemoryAllocation) {
            error.code = errc::out_of_memory;
        }
        return error;
    }
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(memory), [ordinal](std::byte* pointer) {
        DeviceGuard on_its_device(ordinal);
        (void)cudaFree(pointer);
    });
}

Result<std::uint64_t> device_free_bytes(int ordinal) {
    DeviceGuard guard(ordinal);
    cudaError_t status = guard.status();
    if (status != cudaSuccess) {
        return cuda_error("cuda:" + std::to_string(ordinal), "cudaSetDevice", status);
    }
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    status = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (status != cudaSuccess) {
        return cuda_error("cuda:" + std::to_string(ordinal), "cudaMemGetInfo", status);
    }
    return static_cast<std::uint64_t>(free_bytes);
}

Result<std::shared_ptr<void>> pin_host_memory(std::span<std::byte> memory) {
    // Portable: the ring serves loads to any device of the process.
    cudaError_t status = cudaHostRegister(memory.data(), memory.size(), cudaHostRegisterPortable);
    if (status != cudaSuccess) {
        Error error = cuda_error("page-locking the ring", "cudaHostRegister", status);
        error.detail += " for " + std::to_string(memory.size()) + " bytes";
        return error;
    }
    return std::shared_ptr<void>(memory.data(), [](void* pointer) { (void)cudaHostUnregister(pointer); });
}

} // namespace ringload::gpu
