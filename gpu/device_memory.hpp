// gpu/device_memory.hpp
//
// Device allocations and page-locked host memory, as shared owners: a load's tensors are
// views into one device allocation that is freed when the last view dies, and the ring's
// slots stay registered with CUDA for as long as the registration lives.
//
//     RL_TRY(memory, allocate_device_memory(0, total_bytes));   // cudaFree when dropped
//     RL_TRY(pinned, pin_host_memory(ring.memory()));            // cudaHostUnregister when dropped
//
// Thread: any. Without CUDA (at build or run time) both fail with a message that says why.
#pragma once

#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace ringload::gpu {

Result<std::shared_ptr<std::byte>> allocate_device_memory(int ordinal, std::size_t length_bytes);

// The device's free memory now (cudaMemGetInfo): how many files a model's load may hold blocks
// for at once (ringload/model_load.hpp files_read_at_once).
Result<std::uint64_t> device_free_bytes(int ordinal);

// Registers existing host memory (e.g. a BufferRing's, already registered with io_uring) so
// that cudaMemcpyAsync from it is a true asynchronous DMA.
Result<std::shared_ptr<void>> pin_host_memory(std::span<std::byte> memory);

} // namespace ringload::gpu
