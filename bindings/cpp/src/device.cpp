// bindings/cpp/src/device.cpp
#include "ringload/device.hpp"

#include "gpu/cuda_probe.hpp"
#include "gpu/device_memory.hpp"

namespace ringload {

Result<int> cuda_device_count() {
    return gpu::cuda_device_count();
}

Result<std::shared_ptr<std::byte>> allocate_device_memory(int ordinal, std::size_t length_bytes) {
    return gpu::allocate_device_memory(ordinal, length_bytes);
}

} // namespace ringload
