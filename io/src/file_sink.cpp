// io/src/file_sink.cpp
#include "ringload/io/file_sink.hpp"

#include "posix_file.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/random_access_file.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

namespace ringload {
namespace {

using posix::errno_error;
using posix::FileDescriptor;

constexpr std::size_t pwrite_threads = 4;
constexpr std::size_t page_write_lanes = 16;

std::string random_suffix() {
    std::random_device device;
    char text[17];
    std::snprintf(text, sizeof text, "%08x%08x", device(), device());
    return text;
}

std::string proc_fd_path(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

Result<void> write_all_at(int fd, std::span<const std::byte> bytes, std::uint64_t offset, const std::string& path) {
    for (std::size_t done = 0; done < bytes.size();) {
        RL_TRY(n, posix::pwrite_some(fd, bytes.data() + done, bytes.size() - done, offset + done, path));
        done += n;
    }
    return {};
}

// pwrite on a blocking thread: the fallback when io_uring is unavailable.
Task<Result<std::size_t>> pwrite_task(int fd, const std::byte* data, std::size_t length, std::uint64_t offset,
                                      std::string path) {
    co_return posix::pwrite_some(fd, data, length, offset, path);
}

// Where the bytes go before commit: an unnamed file, or a named one next to the target.
struct TemporaryFile {
    FileDescriptor fd;        // read-write, through the page cache
    FileDescriptor direct_fd; // O_DIRECT, or invalid where refused
    std::string named;        // the named temporary's file name in the directory; empty if unnamed
};

Result<TemporaryFile> create_temporary(int dir_fd, const std::string& dir_path, const std::string& base,
                                       const FileSinkOptions& options) {
    TemporaryFile temp;
    const bool try_unnamed = options.allow_unnamed_temporary && !posix::environment_flag("RINGLOAD_DISABLE_O_TMPFILE");
    if (try_unnamed) {
        temp.fd = FileDescriptor(::openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0666));
        // Linking it in later goes through /proc/self/fd: without /proc, name it now instead.
        if (temp.fd.valid() && ::access(proc_fd_path(temp.fd.get()).c_str(), F_OK) != 0) {
            temp.fd = FileDescriptor();
        }
    }
    if (!temp.fd.valid()) {
        for (int attempt = 0; attempt < 16 && !temp.fd.valid(); ++attempt) {
            temp.named = "." + base + ".ringload-" + random_suffix();
            temp.fd = FileDescriptor(::openat(dir_fd, temp.named.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666));
            if (!temp.fd.valid() && errno != EEXIST) {
                return errno_error(dir_path, "cannot create a temporary file", errno);
            }
        }
        if (!temp.fd.valid()) {
            return errno_error(dir_path, "cannot create a temporary file", EEXIST);
        }
    }
    if (options.allow_direct) {
        const std::string reopen = temp.named.empty() ? proc_fd_path(temp.fd.get()) : dir_path + "/" + temp.named;
        temp.direct_fd = FileDescriptor(::open(reopen.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
        // EINVAL: the filesystem refuses O_DIRECT (tmpfs); write through the page cache.
    }
    return temp;
}

class AtomicFileSink final : public FileSink {
public:
    AtomicFileSink(asio::io_context& loop, std::string target, std::string dir_path, std::string base,
                   FileDescriptor dir_fd, TemporaryFile temp, bool use_io_uring)
        : target_(std::move(target)),
          dir_path_(std::move(dir_path)),
          base_(std::move(base)),
          dir_fd_(std::move(dir_fd)),
          temp_(std::move(temp)),
          use_io_uring_(use_io_uring) {
        if (use_io_uring_ && posix::make_io_uring_file(loop, shared_file_)) {
            shared_file_->assign(::dup(temp_.fd.get()));
        } else {
            use_io_uring_ = false;
            pwrite_pool_ = std::make_unique<asio::thread_pool>(pwrite_threads);
        }
    }

    ~AtomicFileSink() override {
        if (pwrite_pool_) {
            pwrite_pool_->join();
        }
        if (!committed_ && !temp_.named.empty()) {
            ::unlinkat(dir_fd_.get(), temp_.named.c_str(), 0);
        }
    }

    const std::string& name() const override { return target_; }
    std::size_t alignment_bytes() const override { return direct() ? posix::direct_alignment_bytes : 1; }
    bool uses_io_uring() const override { return use_io_uring_; }
    std::string describe() const override {
        std::string how = direct() ? "O_DIRECT" : "buffered";
        return how + (use_io_uring_ ? " io_uring" : " pwrite");
    }

    Task<Result<std::size_t>> write_some_at(std::uint64_t offset_bytes, SlotBytes source) override {
        std::span<const std::byte> bytes = source.bytes();
        // A short write leaves the rest misaligned: finish it through the page cache.
        const bool use_direct = direct() && posix::direct_aligned(offset_bytes) &&
                                posix::direct_aligned(bytes.size()) &&
                                posix::direct_aligned(reinterpret_cast<std::uintptr_t>(bytes.data()));
        const int fd = use_direct ? temp_.direct_fd.get() : temp_.fd.get();
        if (!use_io_uring_) {
            auto op = asio::co_spawn(*pwrite_pool_, pwrite_task(fd, bytes.data(), bytes.size(), offset_bytes, target_),
                                     asio::use_awaitable);
            auto result = co_await std::move(op);
            co_return result;
        }
        auto& file = (use_direct ? direct_files_ : buffered_files_).for_slot(source.slot->index());
        std::optional<asio::mutable_registered_buffer> registered = source.slot->registered();
        std::tuple<boost::system::error_code, std::size_t> done;
        if (registered) {
            asio::const_registered_buffer window(asio::buffer(*registered + source.slot_offset_bytes, bytes.size()));
            done = co_await file.async_write_some_at(offset_bytes, window, use_task);
        } else {
            auto window = asio::buffer(bytes.data(), bytes.size());
            done = co_await file.async_write_some_at(offset_bytes, window, use_task);
        }
        const auto& [ec, n] = done;
        if (ec) {
            co_return fail(errc::io_error,
                           target_ + ": write at offset " + std::to_string(offset_bytes) + " failed: " + ec.message());
        }
        co_return n;
    }

    Result<void> reserve(std::uint64_t length_bytes) override {
        if (length_bytes == 0) {
            return {};
        }
        // fallocate(2), not posix_fallocate: glibc emulates the latter by writing zeros.
        if (::fallocate(temp_.fd.get(), 0, 0, static_cast<off_t>(length_bytes)) == 0) {
            return {};
        }
        const int error_number = errno;
        if (error_number == EOPNOTSUPP || error_number == ENOSYS) {
            return {};
        }
        return errno_error(target_, "cannot reserve " + std::to_string(length_bytes) + " bytes", error_number);
    }

    Task<Result<void>> write_pages(std::span<const PageWrite> pages) override {
        if (!use_io_uring_) {
            for (const auto& page : pages) {
                const int fd = direct_aligned_piece(page) ? temp_.direct_fd.get() : temp_.fd.get();
                RL_CO_TRY_VOID(write_all_at(fd, page.bytes, page.offset_bytes, target_));
            }
            co_return Result<void>();
        }
        // Lanes of sequential writes, each on its own file object (one operation in flight per
        // object, see PerSlotFiles).
        auto loop = co_await asio::this_coro::executor;
        auto state = std::make_shared<PageLanes>(loop);
        const std::size_t lanes = std::min(page_write_lanes, pages.size());
        state->running = lanes;
        for (std::size_t lane = 0; lane < lanes; ++lane) {
            asio::co_spawn(loop, write_lane(pages, lane, lanes, state), asio::detached);
        }
        while (state->running > 0) {
            auto waited = co_await state->done.async_wait(use_task);
            (void)waited;
        }
        if (state->error) {
            co_return *state->error;
        }
        co_return Result<void>();
    }

    Result<void> commit(std::uint64_t length_bytes) override {
        if (::ftruncate(temp_.fd.get(), static_cast<off_t>(length_bytes)) != 0) {
            return errno_error(target_, "cannot set the file's length", errno);
        }
        if (::fdatasync(temp_.fd.get()) != 0) {
            return errno_error(target_, "cannot flush the file to disk", errno);
        }
        std::string linked = temp_.named;
        if (linked.empty()) {
            // Where the target is not there, the unnamed file is linked in under its name at
            // once: a kill at any moment leaves nothing or the whole file (a kill -9 between a
            // link under a fresh name and the rename once left that name behind). linkat()
            // cannot replace a file: over an existing target, link under a fresh name, then
            // rename over it.
            const std::string from = proc_fd_path(temp_.fd.get());
            if (::linkat(AT_FDCWD, from.c_str(), dir_fd_.get(), base_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
                return placed();
            }
            if (errno != EEXIST) {
                return errno_error(target_, "cannot link the written file into " + dir_path_, errno);
            }
            linked = "." + base_ + ".ringload-" + random_suffix();
            if (::linkat(AT_FDCWD, from.c_str(), dir_fd_.get(), linked.c_str(), AT_SYMLINK_FOLLOW) != 0) {
                return errno_error(target_, "cannot link the written file into " + dir_path_, errno);
            }
        }
        if (::renameat(dir_fd_.get(), linked.c_str(), dir_fd_.get(), base_.c_str()) != 0) {
            int error_number = errno;
            ::unlinkat(dir_fd_.get(), linked.c_str(), 0);
            return errno_error(target_, "cannot rename the written file into place", error_number);
        }
        return placed();
    }

private:
    // The file is under the target's name: made durable with its directory.
    Result<void> placed() {
        committed_ = true;
        if (::fsync(dir_fd_.get()) != 0) {
            return errno_error(dir_path_, "cannot flush the directory to disk", errno);
        }
        return {};
    }

    bool direct() const noexcept { return temp_.direct_fd.valid(); }
    bool direct_aligned_piece(const PageWrite& page) const {
        return direct() && posix::direct_aligned(page.offset_bytes) && posix::direct_aligned(page.bytes.size()) &&
               posix::direct_aligned(reinterpret_cast<std::uintptr_t>(page.bytes.data()));
    }

    struct PageLanes {
        explicit PageLanes(asio::any_io_executor loop) : done(loop) {
            done.expires_at(asio::steady_timer::time_point::max());
        }
        asio::steady_timer done;
        std::size_t running = 0;
        std::optional<Error> error;
    };

    Task<void> write_lane(std::span<const PageWrite> pages, std::size_t lane, std::size_t lanes,
                          std::shared_ptr<PageLanes> state) {
        for (std::size_t i = lane; i < pages.size() && !state->error; i += lanes) {
            const PageWrite& page = pages[i];
            const bool use_direct = direct_aligned_piece(page);
            auto& file = (use_direct ? direct_files_ : buffered_files_).for_slot(static_cast<std::uint32_t>(lane));
            std::size_t done = 0;
            while (done < page.bytes.size()) {
                auto window = asio::buffer(page.bytes.data() + done, page.bytes.size() - done);
                auto [ec, n] = co_await file.async_write_some_at(page.offset_bytes + done, window, use_task);
                if (ec || n == 0) {
                    state->error =
                        fail(errc::io_error, target_ + ": write at offset " + std::to_string(page.offset_bytes + done) +
                                                 " failed: " + (ec ? ec.message() : std::string("nothing written")));
                    break;
                }
                done += n;
            }
        }
        if (--state->running == 0) {
            state->done.cancel();
        }
    }

    std::string target_;
    std::string dir_path_;
    std::string base_;
    FileDescriptor dir_fd_;
    TemporaryFile temp_;
    bool use_io_uring_ = true;
    bool committed_ = false;
    std::optional<asio::random_access_file> shared_file_; // with io_uring only
    posix::PerSlotFiles direct_files_{shared_file_, temp_.direct_fd.get()};
    posix::PerSlotFiles buffered_files_{shared_file_, temp_.fd.get()};
    std::unique_ptr<asio::thread_pool> pwrite_pool_;
};

} // namespace

Result<std::unique_ptr<FileSink>> create_file_sink(asio::io_context& loop, const std::string& target_path,
                                                   FileSinkOptions options) {
    std::filesystem::path target(target_path);
    std::string base = target.filename().string();
    if (base.empty() || base == "." || base == "..") {
        return fail(errc::invalid_argument, target_path + ": not a file name");
    }
    std::string dir_path = target.has_parent_path() ? target.parent_path().string() : ".";
    struct stat info {};
    if (::stat(target_path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
        return fail(errc::invalid_argument, target_path + ": exists and is not a regular file");
    }
    FileDescriptor dir_fd(::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.valid()) {
        return errno_error(dir_path, "cannot open the target's directory", errno);
    }
    RL_TRY(temp, create_temporary(dir_fd.get(), dir_path, base, options));
    const bool io_uring = posix::use_io_uring(options.allow_io_uring);
    return std::unique_ptr<FileSink>(new AtomicFileSink(loop, target_path, std::move(dir_path), std::move(base),
                                                        std::move(dir_fd), std::move(temp), io_uring));
}

} // namespace ringload
