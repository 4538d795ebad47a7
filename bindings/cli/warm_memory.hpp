// bindings/cli/warm_memory.hpp: touches fresh memory once and gives it back (`ringload bench
// load` before each system; bench/ tools before their timed runs).
//
// On VMs that back guest RAM lazily, the first touch of a page costs a trip to the host; once
// the guest has it, later allocations only pay the guest's own zeroing. Benchmarks warm RAM
// before each timed run so that every contender finds it in the same state.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>

namespace ringload::bench {

// False when the memory could not be mapped.
inline bool warm_fresh_memory(std::size_t bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        return false;
    }
    (void)::madvise(memory, bytes, MADV_HUGEPAGE);
    std::memset(memory, 1, bytes);
    ::munmap(memory, bytes);
    return true;
}

} // namespace ringload::bench
