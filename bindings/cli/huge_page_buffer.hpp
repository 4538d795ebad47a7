// bindings/cli/huge_page_buffer.hpp: buffers for the benchmarks' raw O_DIRECT reads and writes
// (`ringload bench limits`, ringload-rawwrite), on huge pages as ringload's ring is.
//
// A 4 MiB O_DIRECT request to or from 4 KiB pages is split by the block layer: fio with 4 KiB-page
// buffers read 0.5-0.9 GB/s here where it reads 1.6-1.8 with huge pages from the same file. A
// disk limit must be the disk's, not that of one kind of buffer.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace ringload::bench {

struct FreeBytes {
    void operator()(std::byte* bytes) const noexcept { std::free(bytes); }
};
using HugePageBuffer = std::unique_ptr<std::byte, FreeBytes>;

// `bytes` at a 2 MiB boundary, advised for transparent huge pages (only a hint: where THP is
// off it is 4 KiB pages); not yet touched. Null when out of memory.
inline HugePageBuffer allocate_huge_page_buffer(std::size_t bytes) {
    constexpr std::size_t huge_page_bytes = 2 << 20;
    void* memory = nullptr;
    if (::posix_memalign(&memory, huge_page_bytes, bytes) != 0) {
        return nullptr;
    }
    (void)::madvise(memory, bytes, MADV_HUGEPAGE);
    return HugePageBuffer(static_cast<std::byte*>(memory));
}

} // namespace ringload::bench
