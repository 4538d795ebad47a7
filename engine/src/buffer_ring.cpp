// engine/src/buffer_ring.cpp
#include "ringload/engine/buffer_ring.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/registered_buffer.hpp>
#include <boost/system/system_error.hpp>

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <string_view>

#include <cerrno>
#include <cstring>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace ringload {
namespace {
constexpr std::size_t huge_page_bytes = 2 << 20;
// Every ring's leased slots; changed under the leasing ring's mutex.
std::atomic<std::uint64_t> slots_leased{0};
} // namespace

// --- SlotLease ------------------------------------------------------------------------------

SlotLease::SlotLease(SlotLease&& other) noexcept : ring_(other.ring_), index_(other.index_) {
    other.ring_ = nullptr;
}

SlotLease& SlotLease::operator=(SlotLease&& other) noexcept {
    if (this != &other) {
        release();
        ring_ = other.ring_;
        index_ = other.index_;
        other.ring_ = nullptr;
    }
    return *this;
}

SlotLease::~SlotLease() {
    release();
}

void SlotLease::release() noexcept {
    if (ring_ != nullptr) {
        ring_->release(index_);
        ring_ = nullptr;
    }
}

std::span<std::byte> SlotLease::bytes() const noexcept {
    RL_ASSERT(ring_ != nullptr, "bytes() of an empty lease");
    return {ring_->memory_ + std::size_t{index_} * ring_->options_.slot_size_bytes, ring_->options_.slot_size_bytes};
}

std::optional<asio::mutable_registered_buffer> SlotLease::registered() const {
    if (ring_ == nullptr || !ring_->registration_) {
        return std::nullopt;
    }
    return (*ring_->registration_)[index_];
}

// --- BufferRing -----------------------------------------------------------------------------

Result<std::unique_ptr<BufferRing>> BufferRing::create(asio::io_context& loop, BufferRingOptions options) {
    if (options.slot_count == 0 || options.slot_size_bytes == 0 || options.slot_size_bytes % 4096 != 0) {
        return fail(errc::invalid_argument,
                    "ring needs at least one slot and a slot size that is a multiple of "
                    "4096 bytes (got " +
                        std::to_string(options.slot_count) + " x " + std::to_string(options.slot_size_bytes) + ")");
    }
    std::size_t bytes = std::size_t{options.slot_count} * options.slot_size_bytes;
    std::size_t mapped = (bytes + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
    void* memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        return fail(errc::out_of_memory,
                    "cannot map a ring of " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
    }
    // Huge pages keep a multi-MiB O_DIRECT read in few segments; pre-fault once, up front, so
    // no read pays for a page fault.
    (void)::madvise(memory, mapped, MADV_HUGEPAGE);
    if (options.populate && ::madvise(memory, mapped, MADV_POPULATE_WRITE) != 0) {
        std::memset(memory, 0, mapped);
    }
    return std::unique_ptr<BufferRing>(new BufferRing(loop, options, static_cast<std::byte*>(memory), mapped));
}

BufferRing::BufferRing(asio::io_context& loop, BufferRingOptions options, std::byte* memory, std::size_t mapped_bytes)
    : loop_(loop), options_(options), memory_(memory), mapped_bytes_(mapped_bytes), slot_released_(loop) {
    free_.reserve(options_.slot_count);
    // Hand slots out lowest first: the stack order keeps recently used (cache-warm) slots busy.
    for (std::uint32_t i = options_.slot_count; i > 0; --i) {
        free_.push_back(i - 1);
    }
    slot_released_.expires_at(asio::steady_timer::time_point::max());
}

BufferRing::~BufferRing() {
    RL_ASSERT(free_count() == options_.slot_count, "ring destroyed while slots are leased");
    registration_.reset();
    ::munmap(memory_, mapped_bytes_);
}

bool BufferRing::register_with_io_uring() {
    if (registration_) {
        return true;
    }
    std::vector<asio::mutable_buffer> buffers;
    buffers.reserve(options_.slot_count);
    for (std::uint32_t i = 0; i < options_.slot_count; ++i) {
        buffers.emplace_back(memory_ + std::size_t{i} * options_.slot_size_bytes, options_.slot_size_bytes);
    }
    try {
        registration_.emplace(asio::register_buffers(loop_, buffers));
    } catch (const boost::system::system_error&) {
        // RLIMIT_MEMLOCK or an old kernel: reads still work, without fixed buffers.
        registration_.reset();
        return false;
    }
    return true;
}

std::uint32_t BufferRing::free_count() const {
    std::lock_guard lock(mutex_);
    return static_cast<std::uint32_t>(free_.size());
}

std::uint64_t BufferRing::slots_leased_in_process() noexcept {
    return slots_leased.load(std::memory_order_relaxed);
}

std::optional<SlotLease> BufferRing::try_acquire() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
        return std::nullopt;
    }
    std::uint32_t index = free_.back();
    free_.pop_back();
    slots_leased.fetch_add(1, std::memory_order_relaxed);
    return SlotLease(this, index);
}

std::optional<std::uint32_t> BufferRing::take_or_wait(bool wait_for_all) {
    std::lock_guard lock(mutex_);
    if (wait_for_all ? free_.size() == options_.slot_count : !free_.empty()) {
        if (wait_for_all) {
            return 0;
        }
        std::uint32_t index = free_.back();
        free_.pop_back();
        slots_leased.fetch_add(1, std::memory_order_relaxed);
        return index;
    }
    ++waiters_;
    return std::nullopt;
}

Task<SlotLease> BufferRing::acquire() {
    for (;;) {
        if (auto index = take_or_wait(false)) {
            co_return SlotLease(this, *index);
        }
        auto waited = co_await slot_released_.async_wait(use_task);
        (void)waited; // cancelled by a release: look again
        std::lock_guard lock(mutex_);
        --waiters_;
    }
}

Task<void> BufferRing::wait_all_released() {
    for (;;) {
        if (take_or_wait(true)) {
            co_return;
        }
        auto waited = co_await slot_released_.async_wait(use_task);
        (void)waited;
        std::lock_guard lock(mutex_);
        --waiters_;
    }
}

namespace {

// RINGLOAD_POISON_SLOTS=1: every released slot is overwritten before it can be reused, so that
// a sink that gave a slot back while a copy (a GPU's DMA) still read it sees wrong bytes every
// time, not only when a read happens to win the race. For tests (scripts/gpu_check.sh).
bool poison_released_slots() {
    static const bool poison = [] {
        const char* value = std::getenv("RINGLOAD_POISON_SLOTS");
        return value != nullptr && std::string_view(value) == "1";
    }();
    return poison;
}

} // namespace

void BufferRing::release(std::uint32_t index) noexcept {
    if (poison_released_slots()) {
        std::memset(memory_ + std::size_t{index} * options_.slot_size_bytes, 0xA5, options_.slot_size_bytes);
    }
    // The wake-up is posted under the lock: once the slot is seen free, a waiter may finish
    // the run and destroy the ring, so nothing here may touch `this` after the unlock. The
    // handler checks the ring is still alive: it may run after the run ended and the ring
    // was destroyed, when the loop runs again (it runs on the loop thread, as the
    // destructor does). Without waiters nothing is posted, so a ring with no run in progress
    // never leaves a handler behind.
    std::lock_guard lock(mutex_);
    free_.push_back(index);
    slots_leased.fetch_sub(1, std::memory_order_relaxed);
    if (waiters_ > 0) {
        asio::post(loop_, [this, alive = std::weak_ptr<void>(alive_)] {
            if (!alive.expired()) {
                slot_released_.cancel();
            }
        });
    }
}

} // namespace ringload
