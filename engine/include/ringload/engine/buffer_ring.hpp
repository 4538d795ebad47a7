// engine/include/ringload/engine/buffer_ring.hpp
//
// A fixed set of equally sized, page-aligned buffers ("slots") that reads land in. The ring is
// the pipeline's only source of backpressure: when all slots are leased, acquire() suspends
// until a sink releases one. A read in place (straight into a tensor's memory) holds a slot
// only while it is in flight, so the slots also bound the reads in flight. The memory is one
// mapping, backed by huge pages and (unless BufferRingOptions::populate is false) pre-faulted
// once, so a 4 MiB O_DIRECT read is not split into 4 KiB pieces by the block layer.
//
//     RL_TRY(ring, BufferRing::create(loop, {.slot_count = 32, .slot_size_bytes = 4 << 20}));
//     ring->register_with_io_uring();               // optional: enables fixed-buffer reads
//     ...
//     SlotLease slot = co_await ring->acquire();    // on the loop; returned when the lease dies
//
// Thread: acquire() and wait_all_released() run on the loop thread. A SlotLease may be
// dropped on any thread: the slot is back at once, and a waiting acquire() is woken on the loop.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/buffer_registration.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace ringload {

inline constexpr std::size_t slot_size_bytes_default = 4 << 20;
inline constexpr std::uint32_t slot_count_default = 32;

struct BufferRingOptions {
    std::uint32_t slot_count = slot_count_default;
    std::size_t slot_size_bytes = slot_size_bytes_default;
    // Fault every slot in (zeroed) up front, so that no read pays for it. False for a ring whose
    // reads mostly land in place (O_DIRECT into host tensors): its slots only stand for reads in
    // flight, and the few it fills fault in on first use; registering it faults it in too.
    bool populate = true;
};

class BufferRing;

// The right to use one slot. Move-only; the slot goes back to the ring when the lease dies.
class SlotLease {
public:
    SlotLease() = default;
    SlotLease(SlotLease&& other) noexcept;
    SlotLease& operator=(SlotLease&& other) noexcept;
    SlotLease(const SlotLease&) = delete;
    SlotLease& operator=(const SlotLease&) = delete;
    ~SlotLease();

    bool valid() const noexcept { return ring_ != nullptr; }
    std::uint32_t index() const noexcept { return index_; }
    std::span<std::byte> bytes() const noexcept;
    // The slot as an io_uring fixed buffer, when the ring is registered.
    std::optional<asio::mutable_registered_buffer> registered() const;

private:
    friend class BufferRing;
    SlotLease(BufferRing* ring, std::uint32_t index) : ring_(ring), index_(index) {}
    void release() noexcept;

    BufferRing* ring_ = nullptr;
    std::uint32_t index_ = 0;
};

class BufferRing {
public:
    static Result<std::unique_ptr<BufferRing>> create(asio::io_context& loop, BufferRingOptions options);
    ~BufferRing();
    BufferRing(const BufferRing&) = delete;
    BufferRing& operator=(const BufferRing&) = delete;

    // Registers every slot with the loop's io_uring; false (and unregistered) where refused.
    bool register_with_io_uring();
    bool registered() const noexcept { return registration_.has_value(); }

    std::optional<SlotLease> try_acquire(); // never suspends
    Task<SlotLease> acquire();              // may suspend until a slot is released
    Task<void> wait_all_released();         // suspends until every slot is back

    std::uint32_t slot_count() const noexcept { return options_.slot_count; }
    std::size_t slot_size_bytes() const noexcept { return options_.slot_size_bytes; }
    std::uint32_t free_count() const;
    // Slots leased now from every ring of the process: 0 whenever no run holds one. For checks
    // that failed and cancelled loads give every slot back (tests/bindings/cancel_load_test.cpp,
    // tests/tools/soak.cpp); one relaxed atomic add per lease and release.
    static std::uint64_t slots_leased_in_process() noexcept;
    // Every slot, as one block: to page-lock it for a GPU's copies (gpu::pin_host_memory).
    std::span<std::byte> memory() const noexcept {
        return {memory_, static_cast<std::size_t>(options_.slot_count) * options_.slot_size_bytes};
    }

private:
    friend class SlotLease;
    BufferRing(asio::io_context& loop, BufferRingOptions options, std::byte* memory, std::size_t mapped_bytes);
    void release(std::uint32_t index) noexcept;
    // Takes a free slot, or registers the caller as a waiter (both under the lock, so a release
    // in between cannot be missed).
    std::optional<std::uint32_t> take_or_wait(bool wait_for_all);

    asio::io_context& loop_;
    BufferRingOptions options_;
    std::byte* memory_ = nullptr;
    std::size_t mapped_bytes_ = 0;
    mutable std::mutex mutex_;
    std::vector<std::uint32_t> free_;  // guarded by mutex_
    std::uint32_t waiters_ = 0;        // guarded by mutex_
    asio::steady_timer slot_released_; // loop only: waiters sleep on it, releases cancel it
    std::optional<asio::buffer_registration<std::vector<asio::mutable_buffer>>> registration_;
    std::shared_ptr<void> alive_ = std::make_shared<char>(); // wake-ups posted by releases check it
};

} // namespace ringload
