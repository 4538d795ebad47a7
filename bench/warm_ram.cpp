// bench/warm_ram.cpp: `ringload-warm-ram BYTES` touches BYTES of fresh memory once and exits.
//
// On VMs that back guest RAM lazily, the first touch of a page costs a trip to the host; once
// the guest has it, later allocations only pay the guest's own zeroing. Benchmarks run this
// before each timed run so that every contender finds RAM in the same state.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: ringload-warm-ram BYTES\n");
        return 2;
    }
    const std::size_t bytes = std::strtoull(argv[1], nullptr, 10);
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        std::perror("ringload-warm-ram: mmap");
        return 1;
    }
    (void)::madvise(memory, bytes, MADV_HUGEPAGE);
    std::memset(memory, 1, bytes);
    ::munmap(memory, bytes);
    return 0;
}
