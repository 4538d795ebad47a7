// bindings/cli/bench_disk.hpp
//
// Sequential reads of one file, the ways a load can read it: O_DIRECT through io_uring with N
// block-sized reads in flight (the pattern of `fio --rw=read --bs=4M --iodepth=N
// --ioengine=io_uring --direct=1`, so the two agree: bench/disk_vs_fio.sh), and buffered
// pread, cold or from the page cache. Each returns bytes / seconds in GB/s (1e9).
//
// Cold without root: evict_from_page_cache() drops the file's clean pages with
// posix_fadvise(DONTNEED), and cached_fraction() (mincore) says whether that worked.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <string>

namespace ringload::cli {

Result<double> read_direct_gb_per_s(const std::string& path, std::uint32_t queue_depth,
                                    std::size_t block_bytes = 4 << 20);
Result<double> read_buffered_gb_per_s(const std::string& path);

Result<void> evict_from_page_cache(const std::string& path);
// The fraction (0..1) of the file's pages in the page cache.
Result<double> cached_fraction(const std::string& path);

// A file of `bytes` random-looking bytes, written and flushed (for `bench limits --dir`).
Result<void> write_scratch_file(const std::string& path, std::uint64_t bytes);

} // namespace ringload::cli
