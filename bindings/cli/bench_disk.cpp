// bindings/cli/bench_disk.cpp
#include "bench_disk.hpp"

#include "huge_page_buffer.hpp"

#include <liburing.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

namespace ringload::cli {
namespace {

Error errno_error(const std::string& what) {
    return fail(errc::io_error, what + ": " + std::strerror(errno));
}

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

Result<double> read_direct_gb_per_s(const std::string& path, std::uint32_t queue_depth, std::size_t block_bytes) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    if (fd.get() < 0) {
        return errno_error(path + ": open with O_DIRECT");
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return errno_error(path);
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    io_uring ring{};
    if (int rc = io_uring_queue_init(queue_depth * 2, &ring, 0); rc < 0) {
        return fail(errc::io_error, "io_uring_queue_init: " + std::string(std::strerror(-rc)) +
                                        " (seccomp or kernel.io_uring_disabled?)");
    }
    std::unique_ptr<io_uring, decltype(&io_uring_queue_exit)> ring_guard(&ring, io_uring_queue_exit);
    // One buffer per read in flight, on huge pages (huge_page_buffer.hpp), faulted in and
    // registered before the clock starts, as fio does: neither pays for that inside its timed
    // region.
    auto buffers = bench::allocate_huge_page_buffer(block_bytes * queue_depth);
    if (!buffers) {
        return fail(errc::out_of_memory, "bench: read buffers");
    }
    std::memset(buffers.get(), 0, block_bytes * queue_depth);
    std::vector<iovec> iovecs(queue_depth);
    for (std::uint32_t i = 0; i < queue_depth; ++i) {
        iovecs[i] = {buffers.get() + i * block_bytes, block_bytes};
    }
    const bool fixed = io_uring_register_buffers(&ring, iovecs.data(), queue_depth) == 0;

    std::uint64_t next_offset = 0;
    std::uint64_t bytes = 0;
    std::uint32_t in_flight = 0;
    auto submit = [&](std::uint32_t slot) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        // The tail is read with a full block: the kernel returns a short count at EOF, and the
        // length stays aligned for O_DIRECT.
        if (fixed) {
            io_uring_prep_read_fixed(sqe, fd.get(), iovecs[slot].iov_base, block_bytes, next_offset,
                                     static_cast<int>(slot));
        } else {
            io_uring_prep_read(sqe, fd.get(), iovecs[slot].iov_base, block_bytes, next_offset);
        }
        io_uring_sqe_set_data64(sqe, slot);
        next_offset += block_bytes;
        ++in_flight;
    };
    const auto started = std::chrono::steady_clock::now();
    for (std::uint32_t slot = 0; slot < queue_depth && next_offset < size; ++slot) {
        submit(slot);
    }
    io_uring_submit(&ring);
    while (in_flight > 0) {
        io_uring_cqe* cqe = nullptr;
        if (int rc = io_uring_wait_cqe(&ring, &cqe); rc < 0) {
            return fail(errc::io_error, path + ": io_uring_wait_cqe: " + std::strerror(-rc));
        }
        const int result = cqe->res;
        const auto slot = static_cast<std::uint32_t>(io_uring_cqe_get_data64(cqe));
        io_uring_cqe_seen(&ring, cqe);
        --in_flight;
        if (result < 0) {
            return fail(errc::io_error, path + ": O_DIRECT read: " + std::strerror(-result));
        }
        bytes += static_cast<std::uint64_t>(result);
        if (next_offset < size) {
            submit(slot);
            io_uring_submit(&ring);
        }
    }
    const double seconds = seconds_since(started);
    return static_cast<double>(bytes) / seconds / 1e9;
}

Result<double> read_buffered_gb_per_s(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        return errno_error(path);
    }
    constexpr std::size_t block_bytes = 4 << 20;
    std::vector<std::byte> buffer(block_bytes);
    std::uint64_t bytes = 0;
    const auto started = std::chrono::steady_clock::now();
    for (;;) {
        const ssize_t n = ::pread(fd.get(), buffer.data(), block_bytes, static_cast<off_t>(bytes));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno_error(path + ": pread");
        }
        if (n == 0) {
            break;
        }
        bytes += static_cast<std::uint64_t>(n);
    }
    return static_cast<double>(bytes) / seconds_since(started) / 1e9;
}

Result<void> evict_from_page_cache(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        return errno_error(path);
    }
    // Dirty pages are not dropped: write them back first.
    ::fdatasync(fd.get());
    if (int rc = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED); rc != 0) {
        errno = rc;
        return errno_error(path + ": posix_fadvise(DONTNEED)");
    }
    return {};
}

Result<double> cached_fraction(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        return errno_error(path);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return errno_error(path);
    }
    if (st.st_size == 0) {
        return 0.0;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (mapped == MAP_FAILED) {
        return errno_error(path + ": mmap");
    }
    const long page_bytes = ::sysconf(_SC_PAGESIZE);
    const std::size_t pages = (size + static_cast<std::size_t>(page_bytes) - 1) / static_cast<std::size_t>(page_bytes);
    std::vector<unsigned char> resident(pages);
    const int rc = ::mincore(mapped, size, resident.data());
    ::munmap(mapped, size);
    if (rc != 0) {
        return errno_error(path + ": mincore");
    }
    std::size_t cached = 0;
    for (unsigned char page : resident) {
        cached += page & 1;
    }
    return static_cast<double>(cached) / static_cast<double>(pages);
}

Result<void> write_scratch_file(const std::string& path, std::uint64_t bytes) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
        return errno_error(path);
    }
    // Not zeros: a file system that skips or compresses zero blocks would read them faster.
    std::vector<std::uint64_t> block((4 << 20) / sizeof(std::uint64_t));
    std::uint64_t state = 1;
    for (auto& word : block) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        word = state;
    }
    for (std::uint64_t done = 0; done < bytes;) {
        const std::size_t n = std::min<std::uint64_t>(bytes - done, block.size() * sizeof(std::uint64_t));
        const ssize_t written = ::pwrite(fd.get(), block.data(), n, static_cast<off_t>(done));
        if (written <= 0) {
            return errno_error(path + ": write");
        }
        done += static_cast<std::uint64_t>(written);
        block[0] += 1; // each block differs from the last
    }
    if (::fsync(fd.get()) != 0) {
        return errno_error(path + ": fsync");
    }
    return {};
}

} // namespace ringload::cli
