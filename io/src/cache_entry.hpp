// io/src/cache_entry.hpp
//
// One remote object's entry in a node-local cache directory (object_cache.hpp), on disk:
//
//   DIR/<32 hex digits of SHA-256(uri)>/
//     data    the object's bytes at their own offsets: a sparse file of the object's size
//     lock    flock: shared while a load uses the entry, exclusive to reset or evict it; its
//             mtime is the entry's last use (least recently used goes first). OFD byte-range
//             locks on it claim blocks while a load fills them (byte i: block i), and its byte
//             i is 1 once block i was committed (a hint against filling it twice).
//     map-*   which blocks of `data` hold the object's bytes, each with its CRC32, and for which
//             version of which URI: each fill writes its own, after `data` was fsynced, through
//             temp + fsync + rename
//
// A block counts only when a map lists it for the object's current version, and then only
// while its CRC matches on reading: bytes a fill wrote before it crashed (no map), or flipped
// since, are never served.
// Thread: one load's loop thread, except commit (its filler thread).
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ringload::object_cache {

inline constexpr std::size_t block_bytes = 64 << 10;

// The CRC32 a map keeps for a block's bytes (and a map keeps of itself).
std::uint32_t block_crc(std::span<const std::byte> bytes);

struct FilledBlock {
    std::uint64_t block = 0;
    std::uint32_t crc = 0;
};

class CacheEntry {
public:
    // The entry for `uri` under `dir` (both created as needed), shared-locked, its maps read.
    static Result<std::unique_ptr<CacheEntry>> open(const std::string& dir, const std::string& uri);
    ~CacheEntry();
    CacheEntry(const CacheEntry&) = delete;
    CacheEntry& operator=(const CacheEntry&) = delete;

    const std::string& path() const { return path_; }
    // The version the maps were written for ("" when there are none) and the object's size.
    const std::string& version() const { return version_; }
    std::uint64_t size_bytes() const { return size_bytes_; }
    std::uint64_t block_count() const { return crcs_.size(); }
    bool holds(std::uint64_t block) const { return block < present_.size() && present_[block] != 0; }
    std::uint32_t crc(std::uint64_t block) const { return crcs_[block]; }
    bool complete() const { return !version_.empty() && held_blocks_ == crcs_.size(); }
    std::uint64_t held_bytes() const;
    // A block whose bytes did not match its CRC: not served again by this entry.
    void forget(std::uint64_t block);

    // Makes it the entry of `version` (an object of `size_bytes`): one of another version is
    // emptied first, which needs the exclusive lock; false when another load uses it.
    Result<bool> adopt(const std::string& version, std::uint64_t size_bytes);

    int data_fd() const { return data_fd_; }
    std::string data_path() const { return path_ + "/data"; }

    // Claims blocks [first, last] for this entry to fill (another process filling any of them
    // keeps them): false when it holds some. Claims end with the entry.
    bool claim(std::uint64_t first, std::uint64_t last);
    // Which of blocks [first, last] a fill has committed (this one, or another process's since
    // this entry read the maps): the lock file's marks. Not filled again.
    std::vector<bool> committed_since_open(std::uint64_t first, std::uint64_t last) const;

    // Makes `filled` (written to data_fd) count for later loads: data fsynced, then a map
    // listing them renamed into place. Thread: any, one at a time.
    Result<void> commit(std::span<const FilledBlock> filled);

private:
    CacheEntry() = default;
    Result<void> lock_shared();
    Result<void> read_maps();
    Result<void> merge_maps_alone();
    Result<void> open_data(bool create);
    void clear_blocks();
    void mark_committed(std::span<const FilledBlock> filled);

    std::string path_;
    std::string uri_;
    int lock_fd_ = -1;
    int data_fd_ = -1;
    std::string version_;
    std::uint64_t size_bytes_ = 0;
    std::vector<std::uint32_t> crcs_;
    std::vector<std::uint8_t> present_;
    std::uint64_t held_blocks_ = 0;
    std::vector<std::string> map_files_;  // of version_
    std::vector<std::string> stale_maps_; // torn, or of another version: never read
};

// "ringload: cache: <text>" on stderr: what the cache could not do, while the load goes on.
void warn(const std::string& text);

// Frees room for `need_bytes` more under `dir` within `max_bytes`, removing the least recently
// used entries no load is using (never `keep`). False when that is not enough.
bool make_room(const std::string& dir, const std::string& keep, std::uint64_t need_bytes, std::uint64_t max_bytes);

} // namespace ringload::object_cache
