// io/src/posix_file.hpp
//
// What the file source and the file sink share: an owned descriptor, errno messages that name
// the path, the environment switches, and io_uring file objects one per ring slot.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/random_access_file.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ringload::posix {

// O_DIRECT needs offsets, lengths and addresses aligned to the logical block size, which is at
// most 4 KiB on the devices we meet; 4 KiB is always a valid choice.
inline constexpr std::size_t direct_alignment_bytes = 4096;

inline bool direct_aligned(std::uint64_t value) {
    return value % direct_alignment_bytes == 0;
}

class FileDescriptor {
public:
    FileDescriptor() = default;
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    FileDescriptor& operator=(FileDescriptor&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor();

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// "<path>: <what>: <strerror>", errc::not_found for ENOENT, else errc::io_error.
Error errno_error(const std::string& path, const std::string& what, int error_number);

// One pread / pwrite at `offset`, retried on EINTR: the bytes moved (0 at EOF for reads), or an
// error naming `path` and the offset.
Result<std::size_t> pread_some(int fd, std::byte* data, std::size_t length, std::uint64_t offset,
                               const std::string& path);
Result<std::size_t> pwrite_some(int fd, const std::byte* data, std::size_t length, std::uint64_t offset,
                                const std::string& path);

// Whether environment variable `name` is set to something other than "" or "0".
bool environment_flag(const char* name);

// io_uring is off (seccomp, kernel.io_uring_disabled, RINGLOAD_DISABLE_IO_URING=1): says so
// once on stderr.
bool use_io_uring(bool allowed);

// Makes `file` on `loop`; false, leaving it empty, where the loop cannot have an io_uring. Asio
// makes a loop's ring (16384 entries) with its first file object and throws where the kernel
// refuses it: ENOMEM with many loads at once, each loop with its ring (the soak, 64 at once),
// or a refusal use_io_uring's small probe did not meet. Says so on stderr once; the caller
// then reads or writes with pread/pwrite. No file object may be made on a loop without one:
// the first one of a source or sink is made here.
bool make_io_uring_file(asio::io_context& loop, std::optional<asio::random_access_file>& file);

// Asio's io_uring service keeps one operation in flight per I/O object and queues the rest
// (boost/asio/detail/impl/io_uring_service.ipp, start_op). One object per ring slot, each on
// its own dup of the descriptor, lets every slot's I/O be in the kernel at once.
class PerSlotFiles {
public:
    // `shared` is made (make_io_uring_file) before the first for_slot.
    PerSlotFiles(std::optional<asio::random_access_file>& shared, int fd) : shared_(shared), fd_(fd) {}
    asio::random_access_file& for_slot(std::uint32_t slot_index);

private:
    std::optional<asio::random_access_file>& shared_; // used when out of descriptors (correct, slower)
    int fd_;
    std::vector<std::unique_ptr<asio::random_access_file>> files_;
};

} // namespace ringload::posix
