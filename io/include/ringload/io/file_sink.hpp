// io/include/ringload/io/file_sink.hpp
//
// A new file as a WriteSink, put in place atomically. Bytes go to an unnamed temporary file in
// the target's directory (O_TMPFILE); commit() trims it, flushes it to disk and only then
// links it in under a temporary name and renames that over the target. A sink destroyed
// without commit() leaves nothing behind, and a process killed mid-write (kill -9) leaves the
// previous file intact: the kernel frees an unnamed file with its last descriptor.
//
// Where the filesystem has no O_TMPFILE (or /proc is missing) the temporary file is named
// `.<target>.ringload-<random>`; it is removed on failure and on destruction, but not after
// kill -9.
//
// Bulk writes go through io_uring from the ring's slots, with O_DIRECT where the filesystem
// allows it; patch() writes small pieces through the page cache.
#pragma once

#include "ringload/engine/write_plan.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <span>
#include <string>

namespace ringload {

struct FileSinkOptions {
    bool allow_direct = true;
    bool allow_io_uring = true; // RINGLOAD_DISABLE_IO_URING=1 forces pwrite too
    // RINGLOAD_DISABLE_O_TMPFILE=1 forces the named temporary file too (for tests).
    bool allow_unnamed_temporary = true;
};

class FileSink : public WriteSink {
public:
    ~FileSink() override = default;
    // Writes bytes at any offset through the page cache (headers patched after the data).
    virtual Result<void> patch(std::uint64_t offset_bytes, std::span<const std::byte> bytes) = 0;
    // Trims the file to length_bytes, makes it durable and puts it under the target name.
    virtual Result<void> commit(std::uint64_t length_bytes) = 0;
};

Result<std::unique_ptr<FileSink>> create_file_sink(asio::io_context& loop, const std::string& target_path,
                                                   FileSinkOptions options = {});

} // namespace ringload
