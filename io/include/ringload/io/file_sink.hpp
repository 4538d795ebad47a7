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
// allows it; write_pages() puts whole pages back (headers finished after the data) the same way,
// many at once.
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

struct PageWrite {
    std::uint64_t offset_bytes = 0;
    std::span<const std::byte> bytes;
};

class FileSink : public WriteSink {
public:
    ~FileSink() override = default;
    // Allocates the file's blocks up front (fallocate): O_DIRECT writes inside the file's size
    // run in parallel where extending writes would be serialised, and a full disk fails here,
    // before any data is written. A filesystem without fallocate is not an error.
    virtual Result<void> reserve(std::uint64_t length_bytes) = 0;
    // Writes each piece at its offset, many in flight: O_DIRECT for pieces that are aligned
    // (4 KiB pages from 4 KiB-aligned memory), through the page cache otherwise. Buffered
    // patches made fdatasync write hundreds of scattered dirty pages (0.5 s on the test VM).
    virtual Task<Result<void>> write_pages(std::span<const PageWrite> pages) = 0;
    // Trims the file to length_bytes, makes it durable and puts it under the target name.
    virtual Result<void> commit(std::uint64_t length_bytes) = 0;
};

Result<std::unique_ptr<FileSink>> create_file_sink(asio::io_context& loop, const std::string& target_path,
                                                   FileSinkOptions options = {});

} // namespace ringload
