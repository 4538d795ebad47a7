// engine/src/host_arena.cpp
#include "ringload/host_arena.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14; older glibc headers lack the name
#endif

namespace ringload {
namespace {

constexpr std::size_t huge_page_bytes = 2 << 20;
constexpr std::size_t prefault_step_bytes = 64 << 20;

// Touches each page once (one write per 4 KiB) where MADV_POPULATE_WRITE is unknown.
// Faults each page in for writing without changing it: the copies (or in-place network reads)
// may already be filling it, and a plain store of 0 would wipe what they wrote. An atomic
// add of 0 is a write access that keeps whatever is there.
void touch_pages(std::byte* begin, std::size_t length) {
    for (std::size_t offset = 0; offset < length; offset += 4096) {
        __atomic_fetch_add(reinterpret_cast<unsigned char*>(begin + offset), 0, __ATOMIC_RELAXED);
    }
}

} // namespace

Result<std::shared_ptr<HostArena>> HostArena::create(std::size_t size_bytes) {
    // Round the mapping to whole huge pages so the kernel can back all of it with THP; an arena
    // smaller than one (a single small tensor: safe_open's get_tensor) takes base pages, where
    // a huge page would cost zeroing 2 MiB for a few bytes.
    const bool huge = size_bytes >= huge_page_bytes;
    const std::size_t page_bytes = huge ? huge_page_bytes : 4096;
    const std::size_t mapped = std::max<std::size_t>((size_bytes + page_bytes - 1) & ~(page_bytes - 1), page_bytes);
    void* memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
        return fail(errc::out_of_memory,
                    "cannot map " + std::to_string(size_bytes) + " bytes for tensors: " + std::strerror(errno));
    }
    // Advisory: where THP is off the arena still works, with 4 KiB faults.
    if (huge) {
        (void)::madvise(memory, mapped, MADV_HUGEPAGE);
    }
    return std::shared_ptr<HostArena>(new HostArena(static_cast<std::byte*>(memory), mapped, size_bytes));
}

HostArena::HostArena(std::byte* data, std::size_t mapped_bytes, std::size_t size_bytes)
    : data_(data), mapped_bytes_(mapped_bytes), size_bytes_(size_bytes) {}

HostArena::~HostArena() {
    join_prefault();
    ::munmap(data_, mapped_bytes_);
}

void HostArena::prefault_in_background() {
    if (prefault_thread_.joinable() || size_bytes_ == 0) {
        return;
    }
    prefault_thread_ = std::thread([data = data_, length = size_bytes_] {
        for (std::size_t offset = 0; offset < length; offset += prefault_step_bytes) {
            std::size_t step = std::min(prefault_step_bytes, length - offset);
            if (::madvise(data + offset, step, MADV_POPULATE_WRITE) != 0) {
                touch_pages(data + offset, step);
            }
        }
    });
}

void HostArena::join_prefault() {
    if (prefault_thread_.joinable()) {
        prefault_thread_.join();
    }
}

} // namespace ringload
