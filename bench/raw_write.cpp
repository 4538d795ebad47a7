// ringload-rawwrite OUT BYTES [QUEUE_DEPTH]: the disk's raw sequential write throughput, for
// the writer benchmark (bench/write_vs_disk.sh).
//
// The pattern of `fio --rw=write --bs=4M --iodepth=16 --ioengine=io_uring --direct=1
// --end_fsync=1`: a fresh file, its blocks allocated first (as fio lays out with fallocate and
// as our writer reserves), QUEUE_DEPTH (default 16) O_DIRECT 4 MiB writes kept in flight from
// registered huge-page buffers. The clock runs from the first submit until fdatasync has
// returned, because a writer's file is only written once it is durable (fio leaves its
// end_fsync out of its bandwidth). Prints
// {"gb_per_s": ..., "write_seconds": ..., "sync_seconds": ...}.
#include "../bindings/cli/huge_page_buffer.hpp"

#include <liburing.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::size_t block_bytes = 4 << 20;

int fail(const char* what) {
    std::fprintf(stderr, "ringload-rawwrite: %s: %s\n", what, std::strerror(errno));
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    using Clock = std::chrono::steady_clock;
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: ringload-rawwrite OUT BYTES [QUEUE_DEPTH]\n");
        return 2;
    }
    const unsigned queue_depth = argc == 4 ? static_cast<unsigned>(std::stoul(argv[3])) : 16;
    const std::string out = argv[1];
    const std::uint64_t requested = std::stoull(argv[2]);
    const std::uint64_t total = (requested + block_bytes - 1) / block_bytes * block_bytes;
    const int fd = ::open(out.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return fail(("cannot open " + out).c_str());
    }
    if (::fallocate(fd, 0, 0, static_cast<off_t>(total)) != 0 && errno != EOPNOTSUPP) {
        return fail("fallocate");
    }
    const std::size_t buffer_bytes = block_bytes * queue_depth;
    // Huge pages, as our writer's ring and fio with glibc.malloc.hugetlb=1.
    const auto memory = ringload::bench::allocate_huge_page_buffer(buffer_bytes);
    if (!memory) {
        errno = ENOMEM;
        return fail("write buffers");
    }
    auto* bytes = reinterpret_cast<unsigned char*>(memory.get());
    std::uint64_t state = 0x9e3779b97f4a7c15ULL; // not zeros: nothing below may shortcut them
    for (std::size_t i = 0; i < buffer_bytes; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        bytes[i] = static_cast<unsigned char>(state >> 56);
    }
    io_uring ring{};
    if (int error = ::io_uring_queue_init(queue_depth, &ring, 0); error < 0) {
        errno = -error;
        return fail("io_uring_queue_init");
    }
    std::vector<iovec> buffers(queue_depth);
    for (unsigned i = 0; i < queue_depth; ++i) {
        buffers[i] = {bytes + i * block_bytes, block_bytes};
    }
    const bool fixed = ::io_uring_register_buffers(&ring, buffers.data(), queue_depth) == 0;

    const auto started = Clock::now();
    std::uint64_t next = 0;
    unsigned in_flight = 0;
    auto submit = [&](unsigned slot) {
        io_uring_sqe* sqe = ::io_uring_get_sqe(&ring);
        if (fixed) {
            ::io_uring_prep_write_fixed(sqe, fd, buffers[slot].iov_base, block_bytes, next, static_cast<int>(slot));
        } else {
            ::io_uring_prep_write(sqe, fd, buffers[slot].iov_base, block_bytes, next);
        }
        ::io_uring_sqe_set_data64(sqe, slot);
        next += block_bytes;
        ++in_flight;
    };
    for (unsigned slot = 0; slot < queue_depth && next < total; ++slot) {
        submit(slot);
    }
    ::io_uring_submit(&ring);
    while (in_flight > 0) {
        io_uring_cqe* cqe = nullptr;
        if (int error = ::io_uring_wait_cqe(&ring, &cqe); error < 0) {
            errno = -error;
            return fail("io_uring_wait_cqe");
        }
        const auto slot = static_cast<unsigned>(::io_uring_cqe_get_data64(cqe));
        if (cqe->res != static_cast<int>(block_bytes)) {
            errno = cqe->res < 0 ? -cqe->res : EIO;
            return fail("write");
        }
        ::io_uring_cqe_seen(&ring, cqe);
        --in_flight;
        if (next < total) {
            submit(slot);
            ::io_uring_submit(&ring);
        }
    }
    const auto written = Clock::now();
    if (::fdatasync(fd) != 0) {
        return fail("fdatasync");
    }
    const auto synced = Clock::now();
    ::io_uring_queue_exit(&ring);
    ::close(fd);
    const double seconds = std::chrono::duration<double>(synced - started).count();
    std::printf("{\"gb_per_s\": %.4f, \"write_seconds\": %.4f, \"sync_seconds\": %.4f}\n",
                static_cast<double>(total) / seconds / 1e9, std::chrono::duration<double>(written - started).count(),
                std::chrono::duration<double>(synced - written).count());
    return 0;
}
