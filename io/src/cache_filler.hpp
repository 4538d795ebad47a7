// io/src/cache_filler.hpp
//
// Keeps the bytes a load reads from a remote source in its cache entry, off the loop thread:
// add() copies them into a queue; a thread of its own writes them into the entry's data file,
// takes each 64 KiB block's CRC32 once all of its bytes have come (in any order, in pieces of
// any size; a block the load reads only part of is never kept), and commits the finished blocks
// (CacheEntry::commit: fsync, then a map) when the load pauses and when it is destroyed.
// Writeback starts as it goes (sync_file_range), so that the commits' fsyncs find little left.
// A failed write (a full disk) stops the filling with one warning; the load goes on uncached.
// Thread: add() on the loop thread; the rest on its own.
#pragma once

#include "cache_entry.hpp"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace ringload::object_cache {

class CacheFiller {
public:
    // `entry` outlives the filler; `name` is what warnings call the object.
    CacheFiller(CacheEntry& entry, std::string name);
    ~CacheFiller(); // writes and commits what was added, then returns

    // Queues a copy of the object's bytes at `offset_bytes` for the entry. Waits while the queue
    // holds more than its bound (the disk behind the network). Nothing happens once filling
    // stopped.
    void add(std::uint64_t offset_bytes, std::span<const std::byte> bytes);
    // The same without a copy: `bytes` stay valid until `done` is called (from the filler's
    // thread, once they are written, or at once when filling stopped). Pages that are whole
    // pages in memory and in the file are written with O_DIRECT: no copy into the page cache,
    // nothing left for a commit's fsync to write.
    void write(std::uint64_t offset_bytes, std::span<const std::byte> bytes, std::function<void()> done);

    // Commits what has been written so far and waits for it (tests; a load's end).
    void flush();

private:
    struct Piece {
        std::uint64_t offset_bytes = 0;
        std::vector<std::byte> owned; // add()'s copy
        std::span<const std::byte> bytes;
        std::function<void()> done; // write()'s
    };
    // A block that has some of its bytes: the bytes so far, and which.
    struct PartialBlock {
        std::vector<std::byte> bytes;
        std::vector<std::pair<std::size_t, std::size_t>> have; // [begin, end) ranges, merged
    };

    void run();
    void write_piece(const Piece& piece);
    bool write_at(std::uint64_t offset_bytes, std::span<const std::byte> bytes);
    void account(std::uint64_t offset_bytes, std::span<const std::byte> bytes);
    void add_partial(std::uint64_t block, std::size_t from, std::span<const std::byte> bytes);
    void commit_written();
    void stop_filling(const std::string& why);
    std::size_t block_length(std::uint64_t block) const;

    CacheEntry& entry_;
    std::string name_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable room_;
    std::deque<Piece> queue_;
    std::size_t queued_bytes_ = 0;
    bool closing_ = false;
    bool stopped_ = false;
    std::uint64_t flush_asked_ = 0;
    std::uint64_t flush_done_ = 0;
    std::condition_variable flushed_;
    // Filler thread only:
    std::map<std::uint64_t, PartialBlock> partial_;
    std::vector<FilledBlock> written_; // complete since the last commit
    std::uint64_t unsynced_bytes_ = 0;
    int direct_fd_ = -1; // the data file with O_DIRECT (-1: refused, as on tmpfs)
    std::thread thread_;
};

} // namespace ringload::object_cache
