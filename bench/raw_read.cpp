// ringload-rawread: measure raw sequential read throughput of a file or block device.
//
// The goal is a number directly comparable to
//   fio --rw=read --bs=4M --iodepth=16 --ioengine=io_uring --direct=1
// so the I/O pattern deliberately mirrors fio's: a fixed number of block-sized reads are kept in flight,
// each completion immediately refills its slot with the next block, and the clock runs from the first
// submit to the last completion.  Anything that fio does not pay for inside its timed region (buffer
// allocation, page faults, buffer registration) is done before the clock starts.
//
// Build: g++ -std=c++20 -O2 -Wall -Wextra -o ringload-rawread raw_read.cpp -luring

#include <liburing.h>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kProgram = "ringload-rawread";

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kDefaultBlockSize = 4 * kMiB;
constexpr unsigned kDefaultQueueDepth = 16;

// The kernel refuses to register a single fixed buffer larger than 1 GiB.
constexpr std::uint64_t kMaxBlockSize = 1024 * kMiB;
// IORING_MAX_REG_BUFFERS is 16384 and the ring gets 2 * queue_depth entries (max 32768).
constexpr unsigned kMaxQueueDepth = 16384;
// O_DIRECT needs lengths and offsets aligned to the logical block size; 512 is the smallest there is.
constexpr std::uint64_t kMinDirectAlignment = 512;
// The tail of the file is read with a length rounded up to this, which satisfies every common
// logical block size (512 and 4096) while the kernel simply returns a short count at EOF.
constexpr std::uint64_t kTailAlignment = 4096;

// Exit codes: 1 for usage and I/O errors, 2 when io_uring itself cannot be set up, so scripts can tell
// "this machine has no usable io_uring" apart from "the file could not be read".
constexpr int kExitError = 1;
constexpr int kExitRingUnavailable = 2;

struct Options {
    std::string path;
    std::uint64_t block_size = kDefaultBlockSize;
    unsigned queue_depth = kDefaultQueueDepth;
    bool buffered = false;
    bool json = false;
};

struct Measurement {
    std::uint64_t bytes = 0;
    double seconds = 0.0;
};

void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: %s FILE [--block-size BYTES (default 4 MiB)] [--queue-depth N (default 16)]\n"
                 "       [--buffered] [--json]\n"
                 "BYTES accepts a K, M or G suffix (powers of 1024).\n",
                 kProgram);
}

void print_errno(const std::string& what, int error) {
    std::fprintf(stderr, "%s: %s: %s\n", kProgram, what.c_str(), std::strerror(error));
}

// ---------------------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------------------

// Multiplier for an optional binary suffix ("", "K", "KiB", "m", ...); 0 means the suffix is unknown.
std::uint64_t suffix_multiplier(std::string_view suffix) {
    if (suffix.empty()) {
        return 1;
    }
    if (suffix.size() == 3 && (suffix.substr(1) == "iB" || suffix.substr(1) == "ib")) {
        suffix = suffix.substr(0, 1);
    }
    if (suffix.size() != 1) {
        return 0;
    }
    switch (suffix[0]) {
        case 'k':
        case 'K':
            return 1024;
        case 'm':
        case 'M':
            return kMiB;
        case 'g':
        case 'G':
            return 1024 * kMiB;
        default:
            return 0;
    }
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::uint64_t value = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    auto [rest, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || rest == first) {
        return std::nullopt;
    }
    const std::uint64_t multiplier = suffix_multiplier(std::string_view(rest, last - rest));
    if (multiplier == 0 || value > UINT64_MAX / multiplier) {
        return std::nullopt;
    }
    return value * multiplier;
}

// Splits "--name=value" so both "--name value" and "--name=value" are accepted.
struct Flag {
    std::string_view name;
    std::optional<std::string_view> inline_value;
};

Flag split_flag(std::string_view arg) {
    const auto eq = arg.find('=');
    if (eq == std::string_view::npos) {
        return {arg, std::nullopt};
    }
    return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// Fetches the value of a flag that takes one, either inline or from the next argument.
std::optional<std::string_view> flag_value(const Flag& flag, int argc, char** argv, int& index) {
    if (flag.inline_value) {
        return flag.inline_value;
    }
    if (index + 1 >= argc) {
        return std::nullopt;
    }
    return std::string_view(argv[++index]);
}

bool validate_options(const Options& options) {
    if (options.path.empty()) {
        std::fprintf(stderr, "%s: missing FILE\n", kProgram);
        return false;
    }
    if (options.block_size == 0 || options.block_size > kMaxBlockSize) {
        std::fprintf(stderr, "%s: --block-size must be between 1 and %llu bytes\n", kProgram,
                     static_cast<unsigned long long>(kMaxBlockSize));
        return false;
    }
    if (!options.buffered && options.block_size % kMinDirectAlignment != 0) {
        std::fprintf(stderr, "%s: --block-size must be a multiple of %llu for O_DIRECT (or use --buffered)\n", kProgram,
                     static_cast<unsigned long long>(kMinDirectAlignment));
        return false;
    }
    if (options.queue_depth == 0 || options.queue_depth > kMaxQueueDepth) {
        std::fprintf(stderr, "%s: --queue-depth must be between 1 and %u\n", kProgram, kMaxQueueDepth);
        return false;
    }
    return true;
}

// Returns std::nullopt after printing a message when the command line is unusable; sets show_help
// when the user asked for help so main can exit successfully.
std::optional<Options> parse_args(int argc, char** argv, bool& show_help) {
    Options options;
    show_help = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const Flag flag = split_flag(arg);
        if (arg == "-h" || arg == "--help") {
            show_help = true;
            return std::nullopt;
        } else if (arg == "--buffered") {
            options.buffered = true;
        } else if (arg == "--json") {
            options.json = true;
        } else if (flag.name == "--block-size") {
            const auto text = flag_value(flag, argc, argv, i);
            const auto size = text ? parse_size(*text) : std::nullopt;
            if (!size) {
                std::fprintf(stderr, "%s: --block-size needs a size in bytes\n", kProgram);
                return std::nullopt;
            }
            options.block_size = *size;
        } else if (flag.name == "--queue-depth") {
            const auto text = flag_value(flag, argc, argv, i);
            const auto depth = text ? parse_size(*text) : std::nullopt;
            if (!depth || *depth > kMaxQueueDepth) {
                std::fprintf(stderr, "%s: --queue-depth needs a number between 1 and %u\n", kProgram, kMaxQueueDepth);
                return std::nullopt;
            }
            options.queue_depth = static_cast<unsigned>(*depth);
        } else if (arg.size() > 1 && arg[0] == '-') {
            std::fprintf(stderr, "%s: unknown option '%s'\n", kProgram, argv[i]);
            return std::nullopt;
        } else if (options.path.empty()) {
            options.path = arg;
        } else {
            std::fprintf(stderr, "%s: only one FILE may be given\n", kProgram);
            return std::nullopt;
        }
    }
    if (!validate_options(options)) {
        return std::nullopt;
    }
    return options;
}

// ---------------------------------------------------------------------------------------------------------
// Resources (RAII so every early return cleans up; destruction order matters, see run()).
// ---------------------------------------------------------------------------------------------------------

class FileDescriptor {
public:
    explicit FileDescriptor(int fd = -1) : fd_(fd) {}
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const { return fd_; }

private:
    int fd_;
};

// One anonymous mapping that holds every in-flight block, so a single madvise covers it and the kernel
// can back it with huge pages (fewer pages to pin and map when the buffers are registered).
class BufferRegion {
public:
    BufferRegion() = default;
    BufferRegion(const BufferRegion&) = delete;
    BufferRegion& operator=(const BufferRegion&) = delete;
    ~BufferRegion() {
        if (base_ != nullptr) {
            ::munmap(base_, size_);
        }
    }

    // Returns 0 or an errno value.
    int allocate(std::size_t size) {
        void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) {
            return errno;
        }
        base_ = static_cast<std::byte*>(base);
        size_ = size;
        // Only a hint: kernels without transparent huge pages refuse it and 4 KiB pages work just as well.
        (void)::madvise(base_, size_, MADV_HUGEPAGE);
        return 0;
    }

    // Touch every page now so no page fault (or huge page compaction) lands inside the timed region.
    void prefault() {
        // volatile: the stores must happen even though nothing reads the zeros back.
        const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        volatile std::byte* bytes = base_;
        for (std::size_t offset = 0; offset < size_; offset += page) {
            bytes[offset] = std::byte{0};
        }
    }

    std::byte* data() const { return base_; }

private:
    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
};

class Ring {
public:
    Ring() = default;
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;
    ~Ring() {
        if (initialized_) {
            ::io_uring_queue_exit(&ring_);
        }
    }

    // Returns 0 or a negative errno, as liburing does.
    int init(unsigned entries) {
        const int ret = ::io_uring_queue_init(entries, &ring_, 0);
        initialized_ = (ret == 0);
        return ret;
    }

    io_uring* get() { return &ring_; }

private:
    io_uring ring_{};
    bool initialized_ = false;
};

// ---------------------------------------------------------------------------------------------------------
// File setup
// ---------------------------------------------------------------------------------------------------------

// Opens the file, preferring O_DIRECT so the page cache does not inflate the result. Some file systems
// reject O_DIRECT with EINVAL; measuring buffered reads there is more useful than failing, so we retry
// without it and set `fell_back` (the caller reports it once it knows the file is readable at all,
// since directories fail the same way). Returns the descriptor or -errno.
int open_input(const Options& options, bool& fell_back) {
    fell_back = false;
    if (!options.buffered) {
        const int fd = ::open(options.path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (fd >= 0 || errno != EINVAL) {
            return fd >= 0 ? fd : -errno;
        }
        fell_back = true;
    }
    const int fd = ::open(options.path.c_str(), O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

// Size in bytes of a regular file or block device (st_size is 0 for the latter). Returns 0 or an errno.
int input_size(int fd, std::uint64_t& size) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return errno;
    }
    if (S_ISREG(st.st_mode)) {
        size = static_cast<std::uint64_t>(st.st_size);
        return 0;
    }
    if (S_ISBLK(st.st_mode)) {
        return ::ioctl(fd, BLKGETSIZE64, &size) == 0 ? 0 : errno;
    }
    // Pipes and character devices have no size to read sequentially up to.
    return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
}

// One fixed buffer per queue slot, so each read names its own registered buffer index.
int register_buffers(io_uring* ring, std::byte* base, std::uint64_t block_size, unsigned count) {
    std::vector<iovec> iovecs(count);
    for (unsigned i = 0; i < count; ++i) {
        iovecs[i].iov_base = base + i * block_size;
        iovecs[i].iov_len = block_size;
    }
    return ::io_uring_register_buffers(ring, iovecs.data(), count);
}

// ---------------------------------------------------------------------------------------------------------
// The read loop
// ---------------------------------------------------------------------------------------------------------

// Keeps `queue_depth` block reads in flight over the whole file. Slot i always uses fixed buffer i, and
// the slot index travels in user_data so a completion finds its block without any lookup.
class SequentialReader {
public:
    SequentialReader(io_uring* ring, int fd, std::byte* buffers, std::uint64_t block_size, unsigned queue_depth,
                     std::uint64_t file_size, bool direct)
        : ring_(ring),
          fd_(fd),
          buffers_(buffers),
          block_size_(block_size),
          file_size_(file_size),
          direct_(direct),
          slots_(queue_depth) {}

    // Reads the whole file. Returns 0 or a negative errno.
    int run(Measurement& result) {
        for (unsigned slot = 0; slot < slots_.size(); ++slot) {
            if (!start_next_block(slot)) {
                break;
            }
        }
        const auto start = std::chrono::steady_clock::now();
        while (in_flight_ > 0) {
            const int ret = ::io_uring_submit_and_wait(ring_, 1);
            if (ret < 0 && ret != -EINTR) {
                return ret;
            }
            if (const int error = reap_completions(); error != 0) {
                return error;
            }
        }
        const auto stop = std::chrono::steady_clock::now();
        result.bytes = bytes_read_;
        result.seconds = std::chrono::duration<double>(stop - start).count();
        return 0;
    }

private:
    struct Slot {
        std::uint64_t offset = 0; // file offset of the block
        std::uint64_t length = 0; // bytes requested for the block
        std::uint64_t done = 0;   // bytes received so far
    };

    // Length to request for the block at `offset`. With O_DIRECT the tail must still be an aligned
    // length; the kernel stops at EOF and returns the short count, which completes the block.
    std::uint64_t block_length(std::uint64_t offset) const {
        const std::uint64_t remaining = file_size_ - offset;
        if (!direct_) {
            return std::min(block_size_, remaining);
        }
        const std::uint64_t aligned = (remaining + kTailAlignment - 1) / kTailAlignment * kTailAlignment;
        return std::min(block_size_, aligned);
    }

    // Assigns the next unread block to `slot` and queues its read. Returns false at end of file.
    bool start_next_block(unsigned slot) {
        if (next_offset_ >= file_size_) {
            return false;
        }
        slots_[slot] = Slot{next_offset_, block_length(next_offset_), 0};
        next_offset_ += slots_[slot].length;
        ++in_flight_;
        queue_read(slot);
        return true;
    }

    // Queues a read for whatever part of the slot's block is still missing.
    void queue_read(unsigned slot) {
        io_uring_sqe* sqe = ::io_uring_get_sqe(ring_);
        // The ring has twice as many entries as there are slots, so this only happens if a previous
        // submit left entries behind; flushing them makes room.
        while (sqe == nullptr) {
            ::io_uring_submit(ring_);
            sqe = ::io_uring_get_sqe(ring_);
        }
        const Slot& s = slots_[slot];
        std::byte* buffer = buffers_ + slot * block_size_ + s.done;
        ::io_uring_prep_read_fixed(sqe, fd_, buffer, static_cast<unsigned>(s.length - s.done), s.offset + s.done,
                                   static_cast<int>(slot));
        ::io_uring_sqe_set_data64(sqe, slot);
    }

    // Handles every completion currently in the CQ, queueing follow-up reads. Returns 0 or -errno; the
    // first error wins but the CQ is still drained so the ring stays consistent.
    int reap_completions() {
        int error = 0;
        unsigned head = 0;
        unsigned seen = 0;
        io_uring_cqe* cqe = nullptr;
        io_uring_for_each_cqe(ring_, head, cqe) {
            ++seen;
            if (error == 0) {
                error = complete(static_cast<unsigned>(::io_uring_cqe_get_data64(cqe)), cqe->res);
            }
        }
        ::io_uring_cq_advance(ring_, seen);
        return error;
    }

    // Accounts one completion for `slot`. Returns 0 or -errno.
    int complete(unsigned slot, int res) {
        if (res == -EINTR || res == -EAGAIN) {
            queue_read(slot); // transient: nothing was transferred, ask again
            return 0;
        }
        if (res < 0) {
            return res;
        }
        Slot& s = slots_[slot];
        s.done += static_cast<std::uint64_t>(res);
        bytes_read_ += static_cast<std::uint64_t>(res);

        const bool before_eof = s.offset + s.done < file_size_;
        if (res > 0 && s.done < s.length && before_eof) {
            queue_read(slot); // short read in the middle of the file: fetch the rest of this block
            return 0;
        }
        if (res == 0 && before_eof) {
            // The file shrank while we were reading; stop issuing blocks rather than spin on EOF.
            next_offset_ = file_size_;
        }
        --in_flight_;           // this block is finished...
        start_next_block(slot); // ...and its slot moves on to the next one, if any is left
        return 0;
    }

    io_uring* ring_;
    int fd_;
    std::byte* buffers_;
    std::uint64_t block_size_;
    std::uint64_t file_size_;
    bool direct_;
    std::vector<Slot> slots_;
    std::uint64_t next_offset_ = 0;
    std::uint64_t bytes_read_ = 0;
    unsigned in_flight_ = 0;
};

// ---------------------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------------------

double gigabytes_per_second(const Measurement& m) {
    return m.seconds > 0.0 ? static_cast<double>(m.bytes) / m.seconds / 1e9 : 0.0;
}

void print_result(const Options& options, const Measurement& m, bool direct) {
    const auto bytes = static_cast<unsigned long long>(m.bytes);
    const double rate = gigabytes_per_second(m);
    if (options.json) {
        std::printf(
            "{\"bytes\":%llu,\"seconds\":%.6f,\"gb_per_s\":%.3f,\"block_size\":%llu,"
            "\"queue_depth\":%u,\"direct\":%s}\n",
            bytes, m.seconds, rate, static_cast<unsigned long long>(options.block_size), options.queue_depth,
            direct ? "true" : "false");
    } else {
        std::printf("bytes=%llu seconds=%.6f GB/s=%.3f\n", bytes, m.seconds, rate);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------------------------------------

int run(const Options& options) {
    bool fell_back = false;
    const FileDescriptor file(open_input(options, fell_back));
    if (file.get() < 0) {
        print_errno(options.path, -file.get());
        return kExitError;
    }
    std::uint64_t size = 0;
    if (const int error = input_size(file.get(), size); error == EINVAL) {
        std::fprintf(stderr, "%s: %s: not a regular file or block device\n", kProgram, options.path.c_str());
        return kExitError;
    } else if (error != 0) {
        print_errno(options.path, error);
        return kExitError;
    }
    if (fell_back) {
        std::fprintf(stderr, "%s: %s: O_DIRECT not supported, falling back to buffered reads\n", kProgram,
                     options.path.c_str());
    }
    const bool direct = !options.buffered && !fell_back;

    // Declared before the ring so it is unmapped only after the ring (and its registration) is gone.
    BufferRegion buffers;
    if (const int error = buffers.allocate(options.block_size * options.queue_depth); error != 0) {
        print_errno("mmap", error);
        return kExitError;
    }
    buffers.prefault();

    Ring ring;
    if (const int ret = ring.init(2 * options.queue_depth); ret < 0) {
        std::fprintf(stderr, "%s: io_uring_queue_init(%u entries) failed: %s (io_uring unavailable or disabled?)\n",
                     kProgram, 2 * options.queue_depth, std::strerror(-ret));
        return kExitRingUnavailable;
    }
    if (const int ret = register_buffers(ring.get(), buffers.data(), options.block_size, options.queue_depth);
        ret < 0) {
        std::fprintf(stderr, "%s: io_uring_register_buffers failed: %s (check RLIMIT_MEMLOCK)\n", kProgram,
                     std::strerror(-ret));
        return kExitRingUnavailable;
    }

    SequentialReader reader(ring.get(), file.get(), buffers.data(), options.block_size, options.queue_depth, size,
                            direct);
    Measurement result;
    if (const int ret = reader.run(result); ret < 0) {
        print_errno(options.path, -ret);
        return kExitError;
    }
    print_result(options, result, direct);
    return std::fflush(stdout) == 0 ? 0 : kExitError;
}

} // namespace

int main(int argc, char** argv) {
    try {
        bool show_help = false;
        const auto options = parse_args(argc, argv, show_help);
        if (show_help) {
            print_usage(stdout);
            return 0;
        }
        if (!options) {
            print_usage(stderr);
            return kExitError;
        }
        return run(*options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    } catch (...) {
        std::fprintf(stderr, "%s: unexpected error\n", kProgram);
    }
    return kExitError;
}
