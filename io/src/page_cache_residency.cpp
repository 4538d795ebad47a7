// io/src/page_cache_residency.cpp: how much of a file the page cache holds (FileReadMode's
// automatic choice between O_DIRECT and buffered reads).
#include "ringload/io/file_source.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <vector>

// cachestat(2), Linux 6.5: the same number on every architecture; Debian 12's headers predate it.
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

namespace ringload {
namespace {

struct CachestatRange {
    std::uint64_t offset = 0;
    std::uint64_t length = 0; // 0: to the end of the file
};

struct Cachestat {
    std::uint64_t cached_pages = 0;
    std::uint64_t dirty_pages = 0;
    std::uint64_t writeback_pages = 0;
    std::uint64_t evicted_pages = 0;
    std::uint64_t recently_evicted_pages = 0;
};

std::size_t page_bytes() {
    return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// cachestat asks the page cache itself: no mapping of the file. mincore needs one, and the
// mapping takes the process's mmap lock, which stalls every other thread's page faults and
// mmaps meanwhile (~10 ms for a 1 GB file: the other loads of `ringload load DIR`, their
// prefault threads, a new thread's stack). Empty where the kernel (or a seccomp filter) lacks it.
std::optional<double> residency_by_cachestat(int fd, std::uint64_t size_bytes) {
    CachestatRange range;
    Cachestat stat;
    if (::syscall(__NR_cachestat, fd, &range, &stat, 0) != 0) {
        return std::nullopt;
    }
    const std::uint64_t pages = (size_bytes + page_bytes() - 1) / page_bytes();
    return std::min(1.0, static_cast<double>(stat.cached_pages) / static_cast<double>(pages));
}

double residency_by_mincore(int fd, std::uint64_t size_bytes) {
    void* map = ::mmap(nullptr, size_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        return 0.0;
    }
    std::vector<unsigned char> resident((size_bytes + page_bytes() - 1) / page_bytes());
    double fraction = 0.0;
    if (::mincore(map, size_bytes, resident.data()) == 0) {
        std::size_t count = 0;
        for (unsigned char flags : resident) {
            count += flags & 1;
        }
        fraction = static_cast<double>(count) / static_cast<double>(resident.size());
    }
    ::munmap(map, size_bytes);
    return fraction;
}

} // namespace

double page_cache_residency(int fd, std::uint64_t size_bytes) {
    if (size_bytes == 0) {
        return 1.0;
    }
    if (const std::optional<double> fraction = residency_by_cachestat(fd, size_bytes)) {
        return *fraction;
    }
    return residency_by_mincore(fd, size_bytes);
}

} // namespace ringload
