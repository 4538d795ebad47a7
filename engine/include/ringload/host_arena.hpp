// engine/include/ringload/host_arena.hpp
//
// One anonymous mapping that holds every tensor of a load. It is backed by transparent huge
// pages (a fault fills 2 MiB, not 4 KiB) and pre-faulted by a background thread that runs
// ahead of the copies, so first-touch costs stay off the critical path.
//
//     RL_TRY(arena, HostArena::create(total_bytes));
//     arena->prefault_in_background();       // returns at once
//     std::byte* dst = arena->data() + offset;
//
// Thread: any. The memory stays valid while a shared_ptr to the arena lives; tensors handed
// to callers keep it alive.
#pragma once

#include "ringload/error.hpp"

#include <cstddef>
#include <memory>
#include <thread>

namespace ringload {

class HostArena {
public:
    // Tensors start at multiples of this, enough for any vector load and for DLPack consumers.
    static constexpr std::size_t tensor_alignment_bytes = 64;

    static Result<std::shared_ptr<HostArena>> create(std::size_t size_bytes);
    ~HostArena();
    HostArena(const HostArena&) = delete;
    HostArena& operator=(const HostArena&) = delete;

    std::byte* data() const noexcept { return data_; }
    std::size_t size_bytes() const noexcept { return size_bytes_; }

    // Faults the whole arena in from a background thread, front to back.
    void prefault_in_background();
    // Waits for the background pre-fault (if any) to finish.
    void join_prefault();

private:
    HostArena(std::byte* data, std::size_t mapped_bytes, std::size_t size_bytes);

    std::byte* data_ = nullptr;
    std::size_t mapped_bytes_ = 0;
    std::size_t size_bytes_ = 0;
    std::thread prefault_thread_;
};

// Rounds up to the arena's tensor alignment.
constexpr std::size_t align_tensor_offset(std::size_t offset) noexcept {
    return (offset + HostArena::tensor_alignment_bytes - 1) & ~(HostArena::tensor_alignment_bytes - 1);
}

} // namespace ringload
