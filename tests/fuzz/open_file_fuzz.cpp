// tests/fuzz/open_file_fuzz.cpp: a whole file of any of the three formats, end to end, as a
// user's `ringload load` runs it: the format found from the first bytes, the index parsed,
// then every tensor loaded (with hash checks) through the real load graphs, from a memfd.
// Failures must be clean errors; a load that succeeds must hand back what its index says.
#include "ringload/ringload.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload;
    const int fd = ::memfd_create("ringload-fuzz", MFD_CLOEXEC);
    if (fd < 0 || ::write(fd, data, size) != static_cast<ssize_t>(size)) {
        std::abort();
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (auto opened = Deserializer::open(path)) {
        // Hostile indexes may claim terabytes: load only what a small file can hold.
        if (opened->index().total_tensor_bytes() <= (std::uint64_t{64} << 20)) {
            LoadOptions options;
            options.verify_hashes = true;
            options.slot_count = 4;
            options.slot_size_bytes = 64 << 10;
            if (auto model = opened->load(options)) {
                if (model->tensors.size() > opened->index().tensors.size()) {
                    __builtin_trap();
                }
            }
        }
    }
    ::close(fd);
    return 0;
}
