// io/src/file_source.cpp
#include "ringload/io/file_source.hpp"

#include "posix_file.hpp"
#include "ringload/engine/worker_pool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/random_access_file.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace ringload {
namespace {

using posix::direct_aligned;
using posix::direct_alignment_bytes;
using posix::errno_error;
using posix::FileDescriptor;

// Above this fraction of pages cached, buffered reads beat O_DIRECT.
constexpr double cached_threshold = 0.9;
constexpr std::size_t pread_threads = 8;
// A buffered read of cached pages is a memcpy done by the thread that submits it: io_uring
// completes it inline, one read after another, at one core's copy rate (4 GB/s on an H200
// machine whose pinned host-to-device copy runs at 55 GB/s). With cores to spare, buffered
// bulk reads go to this many pread threads at once instead.
constexpr std::size_t max_buffered_read_threads = 8;
constexpr std::size_t min_cores_for_parallel_reads = 4;

// pread on a blocking thread: the fallback when io_uring is unavailable.
Task<Result<std::size_t>> pread_task(int fd, std::byte* data, std::size_t length, std::uint64_t offset,
                                     std::string path) {
    co_return posix::pread_some(fd, data, length, offset, path);
}

class FileSource final : public Source {
public:
    FileSource(asio::io_context& loop, std::string path, std::uint64_t size_bytes, FileDescriptor buffered_fd,
               FileDescriptor direct_fd, bool use_io_uring, std::size_t buffered_read_threads)
        : path_(std::move(path)),
          size_bytes_(size_bytes),
          buffered_fd_(std::move(buffered_fd)),
          direct_fd_(std::move(direct_fd)),
          use_io_uring_(use_io_uring) {
        if (use_io_uring_ && posix::make_io_uring_file(loop, buffered_file_)) {
            buffered_file_->assign(::dup(buffered_fd_.get()));
        } else {
            use_io_uring_ = false;
        }
        if (!use_io_uring_ || buffered_read_threads > 0) {
            pread_pool_threads_ =
                use_io_uring_ ? buffered_read_threads : std::max(pread_threads, buffered_read_threads);
            pread_pool_ = std::make_unique<asio::thread_pool>(pread_pool_threads_);
        }
    }

    ~FileSource() override {
        if (pread_pool_) {
            pread_pool_->join();
        }
    }

    const std::string& name() const override { return path_; }
    std::uint64_t size_bytes() const override { return size_bytes_; }
    std::size_t alignment_bytes() const override { return direct() ? direct_alignment_bytes : 1; }
    bool uses_io_uring() const override { return use_io_uring_; }
    // Tensor memory placed at its bytes' file offset modulo the alignment (load_layout) takes
    // O_DIRECT reads as a slot does; a read that does not fit goes through the page cache.
    bool accepts_any_destination() const override { return true; }
    std::string describe() const override {
        if (direct()) {
            return use_io_uring_ ? "O_DIRECT io_uring" : "O_DIRECT pread";
        }
        return pread_pool_ ? "buffered pread x" + std::to_string(pread_pool_threads_) : "buffered io_uring";
    }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset_bytes, ReadTarget target) override {
        std::span<std::byte> dst = target.bytes();
        // A short read inside a slot leaves the rest misaligned: finish it through the page cache.
        bool use_direct = direct() && direct_aligned(offset_bytes) && direct_aligned(dst.size()) &&
                          direct_aligned(reinterpret_cast<std::uintptr_t>(dst.data()));
        if (!use_io_uring_ || (!use_direct && pread_pool_)) {
            int fd = use_direct ? direct_fd_.get() : buffered_fd_.get();
            auto op = asio::co_spawn(*pread_pool_, pread_task(fd, dst.data(), dst.size(), offset_bytes, path_),
                                     asio::use_awaitable);
            auto result = co_await std::move(op);
            co_return result;
        }
        auto& file = bulk_file(target.slot->index(), use_direct);
        // A fixed buffer names the slot's memory: a read in place goes elsewhere.
        std::optional<asio::mutable_registered_buffer> registered;
        if (target.in_place == nullptr) {
            registered = target.slot->registered();
        }
        std::tuple<boost::system::error_code, std::size_t> done;
        if (registered) {
            auto window = asio::buffer(*registered + target.slot_offset_bytes, dst.size());
            done = co_await file.async_read_some_at(offset_bytes, window, use_task);
        } else {
            auto window = asio::buffer(dst.data(), dst.size());
            done = co_await file.async_read_some_at(offset_bytes, window, use_task);
        }
        co_return finish_read(done, offset_bytes);
    }

    Task<Result<std::size_t>> read_small_at(std::uint64_t offset_bytes, std::span<std::byte> dst) override {
        if (!use_io_uring_) {
            auto op = asio::co_spawn(*pread_pool_,
                                     pread_task(buffered_fd_.get(), dst.data(), dst.size(), offset_bytes, path_),
                                     asio::use_awaitable);
            auto result = co_await std::move(op);
            co_return result;
        }
        auto window = asio::buffer(dst.data(), dst.size());
        auto done = co_await buffered_file_->async_read_some_at(offset_bytes, window, use_task);
        co_return finish_read(done, offset_bytes);
    }

private:
    bool direct() const noexcept { return direct_fd_.get() >= 0; }

    asio::random_access_file& bulk_file(std::uint32_t slot_index, bool use_direct) {
        return (use_direct ? direct_files_ : buffered_files_).for_slot(slot_index);
    }

    Result<std::size_t> finish_read(const std::tuple<boost::system::error_code, std::size_t>& done,
                                    std::uint64_t offset_bytes) const {
        const auto& [ec, n] = done;
        if (ec == asio::error::eof) {
            return std::size_t{0};
        }
        if (ec) {
            return fail(errc::io_error,
                        path_ + ": read at offset " + std::to_string(offset_bytes) + " failed: " + ec.message());
        }
        return n;
    }

    std::string path_;
    std::uint64_t size_bytes_ = 0;
    FileDescriptor buffered_fd_;
    FileDescriptor direct_fd_;
    bool use_io_uring_ = true;
    std::optional<asio::random_access_file> buffered_file_; // with io_uring only
    posix::PerSlotFiles direct_files_{buffered_file_, direct_fd_.get()};
    posix::PerSlotFiles buffered_files_{buffered_file_, buffered_fd_.get()};
    std::size_t pread_pool_threads_ = 0;
    std::unique_ptr<asio::thread_pool> pread_pool_;
};

// How many pread threads read a buffered file's bulk (0: io_uring alone): the caller's choice,
// else the environment's RINGLOAD_BUFFERED_READ_THREADS (benchmarks), else by the usable cores.
std::size_t buffered_read_threads(bool reads_are_buffered, std::optional<std::size_t> chosen) {
    if (!reads_are_buffered) {
        return 0; // O_DIRECT bulk reads copy nothing on the submitting thread
    }
    if (chosen) {
        return *chosen;
    }
    if (const char* forced = std::getenv("RINGLOAD_BUFFERED_READ_THREADS"); forced != nullptr && *forced != '\0') {
        return static_cast<std::size_t>(std::strtoul(forced, nullptr, 10));
    }
    const std::size_t cores = available_cores();
    if (cores < min_cores_for_parallel_reads) {
        return 0; // one or two cores: the inline copies leave them to the rest of the load
    }
    return std::min(cores, max_buffered_read_threads);
}

} // namespace

bool io_uring_available() {
    static const bool available = [] {
        io_uring ring{};
        if (::io_uring_queue_init(2, &ring, 0) != 0) {
            return false;
        }
        ::io_uring_queue_exit(&ring);
        return true;
    }();
    return available;
}

bool mostly_in_page_cache(int fd, std::uint64_t size_bytes) {
    return page_cache_residency(fd, size_bytes) >= cached_threshold;
}

Result<std::unique_ptr<Source>> open_file_source(asio::io_context& loop, const std::string& path,
                                                 FileSourceOptions options) {
    FileDescriptor buffered(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (buffered.get() < 0) {
        return errno_error(path, "cannot open", errno);
    }
    struct stat info {};
    if (::fstat(buffered.get(), &info) != 0) {
        return errno_error(path, "cannot stat", errno);
    }
    if (!S_ISREG(info.st_mode)) {
        return fail(errc::invalid_argument, path + ": not a regular file");
    }
    const auto size_bytes = static_cast<std::uint64_t>(info.st_size);

    bool want_direct = options.mode == FileReadMode::direct ||
                       (options.mode == FileReadMode::automatic && !mostly_in_page_cache(buffered.get(), size_bytes));
    FileDescriptor direct;
    if (want_direct) {
        direct = FileDescriptor(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
        if (direct.get() < 0 && errno != EINVAL) {
            return errno_error(path, "cannot open with O_DIRECT", errno);
        }
        // EINVAL: the filesystem refuses O_DIRECT (tmpfs); read through the page cache.
    }
    bool use_io_uring = posix::use_io_uring(options.allow_io_uring);
    const std::size_t threads = buffered_read_threads(direct.get() < 0, options.buffered_read_threads);
    return std::unique_ptr<Source>(
        new FileSource(loop, path, size_bytes, std::move(buffered), std::move(direct), use_io_uring, threads));
}

} // namespace ringload
