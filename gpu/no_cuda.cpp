// gpu/no_cuda.cpp
//
// The GPU entry points in a build without a CUDA toolkit (or RINGLOAD_WITH_CUDA=OFF): each
// says so, so that `--device cuda` fails with a clear message and everything else runs.
#include "gpu/cuda_link.hpp"
#include "gpu/cuda_probe.hpp"
#include "gpu/device_memory.hpp"

namespace ringload::gpu {
namespace {

Error built_without_cuda(const std::string& what) {
    return fail(errc::unsupported, what +
                                       ": this ringload was built without CUDA (no CUDA toolkit was found at "
                                       "build time; rebuild with the toolkit installed for GPU loads)");
}

} // namespace

Result<int> cuda_device_count() {
    return built_without_cuda("no usable CUDA device");
}

Result<std::unique_ptr<DeviceLink>> open_device_link(int ordinal) {
    return built_without_cuda("cuda:" + std::to_string(ordinal));
}

Result<std::shared_ptr<std::byte>> allocate_device_memory(int ordinal, std::size_t) {
    return built_without_cuda("cuda:" + std::to_string(ordinal));
}

Result<std::uint64_t> device_free_bytes(int ordinal) {
    return built_without_cuda("cuda:" + std::to_string(ordinal));
}

Result<std::shared_ptr<void>> pin_host_memory(std::span<std::byte>) {
    return built_without_cuda("page-locking the ring");
}

} // namespace ringload::gpu
