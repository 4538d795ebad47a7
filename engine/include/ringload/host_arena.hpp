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
// Or a local file's own pages, mapped copy-on-write (map_file): tensors then live in the page
// cache with no copy and no zeroed memory of the load's own, the kernel reading the file ahead
// (safetensors' way, with the whole range asked for at once).
//
// Thread: any. The memory stays valid while a shared_ptr to the arena lives; tensors handed
// to callers keep it alive.
#pragma once

#include "ringload/error.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <thread>

namespace ringload {

class HostArena {
public:
    // Tensors start at multiples of this, enough for any vector load and for DLPack consumers.
    static constexpr std::size_t tensor_alignment_bytes = 64;

    static Result<std::shared_ptr<HostArena>> create(std::size_t size_bytes);
    // The bytes [offset, offset + length) of the file at `path`, mapped privately (a write
    // to a tensor copies its page; the file never changes), data() at `offset`. A file whose
    // size is no longer `expected_size_bytes` (the size its index was read at) is refused.
    // Nothing is read until read_ahead or read_in ask for it.
    static Result<std::shared_ptr<HostArena>> map_file(const std::string& path, std::uint64_t offset_bytes,
                                                       std::size_t length_bytes, std::uint64_t expected_size_bytes);
    ~HostArena();
    HostArena(const HostArena&) = delete;
    HostArena& operator=(const HostArena&) = delete;

    std::byte* data() const noexcept { return data_; }
    std::size_t size_bytes() const noexcept { return size_bytes_; }

    // Faults the whole arena in from a background thread, front to back. An arena destroyed
    // before it is done stops it after the step in progress (64 MiB).
    void prefault_in_background();
    // Stops the background pre-fault after the step in progress (a cancelled load: the rest of
    // the arena is not wanted). Any thread; join_prefault() still waits for the step.
    void stop_prefault() noexcept { prefault_stop_.store(true, std::memory_order_relaxed); }
    // Waits for the background pre-fault (if any) to finish.
    void join_prefault();
    // A mapped file's bytes [offset, offset + length) of data(): returns once they are read
    // and mapped in (the file's pages, read ahead by the kernel). An I/O error, or a file cut
    // short since it was mapped, is an error here rather than a SIGBUS later.
    Result<void> read_in(std::size_t offset_bytes, std::size_t length_bytes) const;
    // Asks the kernel to start reading a mapped file's bytes [offset, offset + length) now
    // (page faults alone read ahead a few hundred KiB at a time); returns without waiting.
    void read_ahead(std::size_t offset_bytes, std::size_t length_bytes) const;
    bool is_mapped_file() const noexcept { return mapped_file_; }

private:
    // [offset, offset + length) of data() widened to start on its page (madvise wants that).
    std::span<std::byte> pages_of(std::size_t offset_bytes, std::size_t length_bytes) const noexcept;
    HostArena(std::byte* map_base, std::size_t mapped_bytes, std::byte* data, std::size_t size_bytes, bool mapped_file);

    std::byte* map_base_ = nullptr;
    std::byte* data_ = nullptr;
    bool mapped_file_ = false;
    std::size_t mapped_bytes_ = 0;
    std::size_t size_bytes_ = 0;
    std::atomic<bool> prefault_stop_{false};
    std::thread prefault_thread_;
};

// Rounds up to the arena's tensor alignment.
constexpr std::size_t align_tensor_offset(std::size_t offset) noexcept {
    return (offset + HostArena::tensor_alignment_bytes - 1) & ~(HostArena::tensor_alignment_bytes - 1);
}

} // namespace ringload
