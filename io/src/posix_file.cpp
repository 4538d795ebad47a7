// io/src/posix_file.cpp
#include "posix_file.hpp"

#include "ringload/io/file_source.hpp"

#include <boost/system/system_error.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ringload::posix {

FileDescriptor::~FileDescriptor() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

Error errno_error(const std::string& path, const std::string& what, int error_number) {
    errc code = error_number == ENOENT ? errc::not_found : errc::io_error;
    return fail(code, path + ": " + what + ": " + std::strerror(error_number));
}

Result<std::size_t> pread_some(int fd, std::byte* data, std::size_t length, std::uint64_t offset,
                               const std::string& path) {
    for (;;) {
        ssize_t n = ::pread(fd, data, length, static_cast<off_t>(offset));
        if (n >= 0) {
            return static_cast<std::size_t>(n);
        }
        if (errno != EINTR) {
            return errno_error(path, "read at offset " + std::to_string(offset), errno);
        }
    }
}

Result<std::size_t> pwrite_some(int fd, const std::byte* data, std::size_t length, std::uint64_t offset,
                                const std::string& path) {
    for (;;) {
        ssize_t n = ::pwrite(fd, data, length, static_cast<off_t>(offset));
        if (n >= 0) {
            return static_cast<std::size_t>(n);
        }
        if (errno != EINTR) {
            return errno_error(path, "write at offset " + std::to_string(offset), errno);
        }
    }
}

bool environment_flag(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && value[0] != '\0' && value[0] != '0';
}

bool use_io_uring(bool allowed) {
    if (allowed && !environment_flag("RINGLOAD_DISABLE_IO_URING") && io_uring_available()) {
        return true;
    }
    static std::once_flag said;
    std::call_once(said, [] {
        std::fprintf(stderr,
                     "ringload: io_uring unavailable (seccomp, kernel.io_uring_disabled or "
                     "RINGLOAD_DISABLE_IO_URING?); using pread/pwrite\n");
    });
    return false;
}

bool make_io_uring_file(asio::io_context& loop, std::optional<asio::random_access_file>& file) {
    try {
        file.emplace(loop);
        return true;
    } catch (const boost::system::system_error& error) {
        static std::once_flag said;
        std::call_once(said, [&error] {
            std::fprintf(stderr,
                         "ringload: the kernel refused an io_uring (%s; too many loads at once?); using "
                         "pread/pwrite where it does\n",
                         error.what());
        });
        return false;
    }
}

asio::random_access_file& PerSlotFiles::for_slot(std::uint32_t slot_index) {
    while (files_.size() <= slot_index) {
        int fd = ::dup(fd_);
        if (fd < 0) {
            return *shared_;
        }
        auto file = std::make_unique<asio::random_access_file>(shared_->get_executor());
        file->assign(fd);
        files_.push_back(std::move(file));
    }
    return *files_[slot_index];
}

} // namespace ringload::posix
