// bench/warm_ram.cpp: `ringload-warm-ram BYTES` touches BYTES of fresh memory once and exits
// (bindings/cli/warm_memory.hpp says why); benchmarks run it before each timed run.
#include "../bindings/cli/warm_memory.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: ringload-warm-ram BYTES\n");
        return 2;
    }
    if (!ringload::bench::warm_fresh_memory(std::strtoull(argv[1], nullptr, 10))) {
        std::perror("ringload-warm-ram: mmap");
        return 1;
    }
    return 0;
}
