// bindings/cpp/include/ringload/device.hpp
//
// The GPU side of the public API, without CUDA headers: whether a load can go to a GPU here,
// and device memory for callers that give destinations (LoadOptions::destination) but have no
// allocator of their own.
//
//     if (auto count = ringload::cuda_device_count(); !count) { log(count.error().message()); }
//     auto memory = ringload::allocate_device_memory(0, bytes);   // freed with the last copy
#pragma once

#include "ringload/error.hpp"

#include <cstddef>
#include <memory>

namespace ringload {

// The number of usable CUDA devices, or an error that says why there are none ("built without
// CUDA", "no usable CUDA device (...)").
Result<int> cuda_device_count();

Result<std::shared_ptr<std::byte>> allocate_device_memory(int ordinal, std::size_t length_bytes);

} // namespace ringload
