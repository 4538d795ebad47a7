// io/include/ringload/io/file_source.hpp
//
// A local file as a Source. Bulk reads go through io_uring (Asio's random_access_file) into
// the ring's registered slots, with O_DIRECT when the file is cold: on this class of VM that is
// twice the throughput of the page cache. Where O_DIRECT is refused (tmpfs) the file is read
// buffered; where the file is already in the page cache buffered reads are faster and chosen;
// where io_uring is unavailable (seccomp, kernel.io_uring_disabled) reads fall back to pread on
// a few threads, and say so once on stderr. A cached file's buffered reads run on several pread
// threads where the process has cores to spare: io_uring copies cached pages inline, on one core.
#pragma once

#include "ringload/engine/source.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <optional>
#include <string>

namespace ringload {

enum class FileReadMode : std::uint8_t {
    automatic, // O_DIRECT unless the file is (mostly) in the page cache or O_DIRECT is refused
    direct,    // O_DIRECT where the filesystem allows it
    buffered,  // through the page cache
};

struct FileSourceOptions {
    FileReadMode mode = FileReadMode::automatic;
    // Environment RINGLOAD_DISABLE_IO_URING=1 forces the pread fallback too (for tests).
    bool allow_io_uring = true;
    // Threads that read a buffered file's bulk with pread, so cached pages are copied on several
    // cores at once (0: io_uring alone). Unset: up to 8 where the process may use 4 cores or
    // more, else 0; the environment's RINGLOAD_BUFFERED_READ_THREADS=N overrides it.
    std::optional<std::size_t> buffered_read_threads;
};

Result<std::unique_ptr<Source>> open_file_source(asio::io_context& loop, const std::string& path,
                                                 FileSourceOptions options = {});

// Whether this process may create an io_uring instance (probed once).
bool io_uring_available();

// Fraction of the file's pages that are in the page cache, in [0, 1].
double page_cache_residency(int fd, std::uint64_t size_bytes);

// Whether FileReadMode::automatic reads the file through the page cache: enough of it is there.
bool mostly_in_page_cache(int fd, std::uint64_t size_bytes);

} // namespace ringload
