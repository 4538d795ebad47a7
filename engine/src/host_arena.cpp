// engine/src/host_arena.cpp
#include "ringload/host_arena.hpp"

#include "ringload/engine/thread_sanitizer.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 // Linux 5.14; older glibc headers lack the name
#endif

#ifdef RINGLOAD_UNDER_TSAN
// ThreadSanitizer's runtime: a thread's accesses between these are not recorded.
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace ringload {
namespace {

constexpr std::size_t huge_page_bytes = 2 << 20;
constexpr std::size_t prefault_step_bytes = 64 << 20;

// Faults each page in for writing without changing it: one atomic add of 0 per 4 KiB (a
// huge page faults in whole on its first). The copies (or in-place reads) may already be
// filling a page, and a plain store of 0 would wipe what they wrote; an atomic add of 0 is a
// write access that keeps whatever is there.
//
// Not MADV_POPULATE_WRITE: it holds the process's mmap_lock while it faults, and every mmap
// and munmap of the other loads in the process (a folder's files load side by side, each
// mapping its ring, its arena and its threads' stacks) waits behind it: with 4 files on 2
// cores the last file's first read started 50-190 ms late (2 MiB calls: still 30-90 ms), to
// end alone after the others. A fault by touch takes only its mapping's lock (per-VMA locks,
// Linux 6.4+), and costs the same (22 vs 23 GB/s for fresh huge pages on this VM).
//
// ThreadSanitizer cannot know the add keeps the bytes, and reports each touch as a race with
// the copy or read landing in the same page: under it the touches are not recorded.
void touch_pages(std::byte* begin, std::size_t length) {
#ifdef RINGLOAD_UNDER_TSAN
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
    for (std::size_t offset = 0; offset < length; offset += 4096) {
        __atomic_fetch_add(reinterpret_cast<unsigned char*>(begin + offset), 0, __ATOMIC_RELAXED);
    }
#ifdef RINGLOAD_UNDER_TSAN
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
#endif
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
    auto* base = static_cast<std::byte*>(memory);
    return std::shared_ptr<HostArena>(new HostArena(base, mapped, base, size_bytes, false));
}

Result<std::shared_ptr<HostArena>> HostArena::map_file(const std::string& path, std::uint64_t offset_bytes,
                                                       std::size_t length_bytes, std::uint64_t expected_size_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fail(errc::io_error, path + ": cannot open it to map its tensors: " + std::strerror(errno));
    }
    struct stat status {};
    if (::fstat(fd, &status) != 0 || static_cast<std::uint64_t>(status.st_size) != expected_size_bytes) {
        ::close(fd);
        return fail(errc::io_error, path + ": the file changed size since its index was read (" +
                                        std::to_string(expected_size_bytes) + " bytes then)");
    }
    // mmap wants a page-aligned file offset: map from the page that holds `offset`.
    const std::uint64_t page_offset = offset_bytes & ~std::uint64_t{4095};
    const std::size_t lead = static_cast<std::size_t>(offset_bytes - page_offset);
    const std::size_t mapped = std::max<std::size_t>(lead + length_bytes, 1);
    void* memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(page_offset));
    if (memory == MAP_FAILED) {
        const int error = errno;
        ::close(fd);
        return fail(errc::io_error,
                    path + ": cannot map " + std::to_string(length_bytes) + " bytes of it: " + std::strerror(error));
    }
    ::close(fd); // the mapping keeps the file
    auto* base = static_cast<std::byte*>(memory);
    return std::shared_ptr<HostArena>(new HostArena(base, mapped, base + lead, length_bytes, true));
}

std::span<std::byte> HostArena::pages_of(std::size_t offset_bytes, std::size_t length_bytes) const noexcept {
    std::byte* begin = data_ + offset_bytes;
    auto* page = reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(begin) & ~std::uintptr_t{4095});
    return {page, static_cast<std::size_t>(begin - page) + length_bytes};
}

Result<void> HostArena::read_in(std::size_t offset_bytes, std::size_t length_bytes) const {
    if (!mapped_file_ || length_bytes == 0) {
        return {};
    }
    const std::span<std::byte> pages = pages_of(offset_bytes, length_bytes);
    std::byte* page = pages.data();
    const std::size_t length = pages.size();
    if (::madvise(page, length, MADV_POPULATE_READ) == 0) {
        return {};
    }
    if (errno == EINVAL) { // a kernel before 5.14: read one byte per page (a cut file then faults)
        for (std::size_t at = 0; at < length; at += 4096) {
            (void)*reinterpret_cast<volatile const unsigned char*>(page + at);
        }
        return {};
    }
    return fail(
        errc::io_error,
        "reading the mapped file's bytes [" + std::to_string(offset_bytes) + ", +" + std::to_string(length_bytes) +
            ") failed (" + std::strerror(errno) +
            (errno == EFAULT ? ": the file was cut short, or the disk failed to read it, while it was loaded)" : ")"));
}

void HostArena::read_ahead(std::size_t offset_bytes, std::size_t length_bytes) const {
    if (!mapped_file_ || length_bytes == 0) {
        return;
    }
    const std::span<std::byte> pages = pages_of(offset_bytes, length_bytes);
    (void)::madvise(pages.data(), pages.size(), MADV_WILLNEED);
}

HostArena::HostArena(std::byte* map_base, std::size_t mapped_bytes, std::byte* data, std::size_t size_bytes,
                     bool mapped_file)
    : map_base_(map_base),
      data_(data),
      mapped_file_(mapped_file),
      mapped_bytes_(mapped_bytes),
      size_bytes_(size_bytes) {}

HostArena::~HostArena() {
    // Nobody holds the arena any more: the pages not faulted in yet are not wanted. A load that
    // failed or was cancelled early waited here for its whole model's memory to be zeroed
    // (a cancel 100 ms into a 2 GiB load took 1.7 s; tests/bindings/cancel_load_test.cpp).
    prefault_stop_.store(true, std::memory_order_relaxed);
    join_prefault();
    ::munmap(map_base_, mapped_bytes_);
}

void HostArena::prefault_in_background() {
    if (prefault_thread_.joinable() || size_bytes_ == 0 || mapped_file_) {
        return;
    }
    prefault_thread_ = std::thread([data = data_, length = size_bytes_, stop = &prefault_stop_] {
        ::pthread_setname_np(::pthread_self(), "ringload-fault"); // in top and perf
        for (std::size_t offset = 0; offset < length && !stop->load(std::memory_order_relaxed);
             offset += prefault_step_bytes) {
            touch_pages(data + offset, std::min(prefault_step_bytes, length - offset));
        }
    });
}

void HostArena::join_prefault() {
    if (prefault_thread_.joinable()) {
        prefault_thread_.join();
    }
}

} // namespace ringload
