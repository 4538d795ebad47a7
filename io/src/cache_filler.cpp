// io/src/cache_filler.cpp
#include "cache_filler.hpp"

#include "posix_file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace ringload::object_cache {
namespace {

// Bytes waiting for the disk before add() waits: the disk is normally faster than the network,
// so this only bounds memory when it is not.
constexpr std::size_t queue_bound_bytes = 256 << 20;
// Writeback is started every this many bytes written.
constexpr std::uint64_t writeback_step_bytes = 64 << 20;
// A pause this long in the load's reads commits what is complete.
constexpr auto idle_commit = std::chrono::milliseconds(200);

} // namespace

CacheFiller::CacheFiller(CacheEntry& entry, std::string name)
    : entry_(entry),
      name_(std::move(name)),
      direct_fd_(::open(entry.data_path().c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC)),
      thread_([this] { run(); }) {}

CacheFiller::~CacheFiller() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (direct_fd_ >= 0) {
        ::close(direct_fd_);
    }
}

void CacheFiller::write(std::uint64_t offset_bytes, std::span<const std::byte> bytes, std::function<void()> done) {
    {
        std::lock_guard lock(mutex_);
        if (!stopped_ && !bytes.empty()) {
            queue_.push_back({offset_bytes, {}, bytes, std::move(done)});
            wake_.notify_one();
            return;
        }
    }
    done();
}

void CacheFiller::add(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    if (bytes.empty()) {
        return;
    }
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return stopped_ || queued_bytes_ < queue_bound_bytes; });
    if (stopped_) {
        return;
    }
    Piece& piece = queue_.emplace_back();
    piece.offset_bytes = offset_bytes;
    piece.owned.assign(bytes.begin(), bytes.end());
    piece.bytes = piece.owned;
    queued_bytes_ += bytes.size();
    lock.unlock();
    wake_.notify_one();
}

void CacheFiller::flush() {
    std::unique_lock lock(mutex_);
    const std::uint64_t ticket = ++flush_asked_;
    wake_.notify_one();
    flushed_.wait(lock, [&] { return flush_done_ >= ticket; });
}

void CacheFiller::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        const bool woken = wake_.wait_for(lock, idle_commit,
                                          [&] { return !queue_.empty() || closing_ || flush_asked_ > flush_done_; });
        if (!queue_.empty()) {
            Piece piece = std::move(queue_.front());
            queue_.pop_front();
            queued_bytes_ -= piece.owned.size();
            lock.unlock();
            room_.notify_all();
            write_piece(piece);
            if (piece.done) {
                piece.done();
            }
            lock.lock();
            continue;
        }
        // Nothing queued: the load ended, paused (`woken` false) or asks for a commit.
        const std::uint64_t asked = flush_asked_;
        const bool closing = closing_;
        if (!woken || asked > flush_done_ || closing) {
            lock.unlock();
            commit_written();
            lock.lock();
            flush_done_ = asked;
            flushed_.notify_all();
        }
        if (closing && queue_.empty()) {
            return;
        }
    }
}

void CacheFiller::write_piece(const Piece& piece) {
    {
        std::lock_guard lock(mutex_);
        if (stopped_) {
            return;
        }
    }
    if (!write_at(piece.offset_bytes, piece.bytes)) {
        return;
    }
    account(piece.offset_bytes, piece.bytes);
}

// Whole pages (in memory and in the file) with O_DIRECT, the rest through the page cache.
bool CacheFiller::write_at(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    const bool direct = direct_fd_ >= 0 && posix::direct_aligned(offset_bytes) && posix::direct_aligned(bytes.size()) &&
                        posix::direct_aligned(reinterpret_cast<std::uintptr_t>(bytes.data()));
    const int fd = direct ? direct_fd_ : entry_.data_fd();
    while (!bytes.empty()) {
        auto put = posix::pwrite_some(fd, bytes.data(), bytes.size(), offset_bytes, entry_.data_path());
        if (!put || *put == 0) {
            stop_filling("cannot write " + (put ? entry_.data_path() + ": no progress" : put.error().detail));
            return false;
        }
        bytes = bytes.subspan(*put);
        offset_bytes += *put;
        if (!direct) {
            unsynced_bytes_ += *put;
        }
    }
    if (unsynced_bytes_ >= writeback_step_bytes) {
        ::sync_file_range(entry_.data_fd(), 0, 0, SYNC_FILE_RANGE_WRITE); // starts it; commit waits
        unsynced_bytes_ = 0;
    }
    return true;
}

std::size_t CacheFiller::block_length(std::uint64_t block) const {
    const std::uint64_t start = block * block_bytes;
    return static_cast<std::size_t>(std::min<std::uint64_t>(block_bytes, entry_.size_bytes() - start));
}

void CacheFiller::account(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    while (!bytes.empty() && offset_bytes < entry_.size_bytes()) {
        const std::uint64_t block = offset_bytes / block_bytes;
        const std::size_t within = static_cast<std::size_t>(offset_bytes - block * block_bytes);
        const std::size_t length = block_length(block);
        const std::size_t take = std::min(bytes.size(), length - within);
        if (within == 0 && take == length) {
            written_.push_back({block, block_crc(bytes.first(take))});
        } else {
            add_partial(block, within, bytes.first(take));
        }
        bytes = bytes.subspan(take);
        offset_bytes += take;
    }
}

void CacheFiller::add_partial(std::uint64_t block, std::size_t from, std::span<const std::byte> bytes) {
    PartialBlock& partial = partial_[block];
    if (partial.bytes.empty()) {
        partial.bytes.resize(block_length(block));
    }
    std::memcpy(partial.bytes.data() + from, bytes.data(), bytes.size());
    auto& have = partial.have;
    have.emplace_back(from, from + bytes.size());
    std::sort(have.begin(), have.end());
    std::vector<std::pair<std::size_t, std::size_t>> merged;
    for (const auto& range : have) {
        if (!merged.empty() && range.first <= merged.back().second) {
            merged.back().second = std::max(merged.back().second, range.second);
        } else {
            merged.push_back(range);
        }
    }
    have = std::move(merged);
    if (have.size() == 1 && have.front().first == 0 && have.front().second == partial.bytes.size()) {
        written_.push_back({block, block_crc(partial.bytes)});
        partial_.erase(block);
    }
}

void CacheFiller::commit_written() {
    if (written_.empty()) {
        return;
    }
    // A block read twice (an index, then the window around it) is listed once.
    std::sort(written_.begin(), written_.end(),
              [](const FilledBlock& a, const FilledBlock& b) { return a.block < b.block; });
    written_.erase(std::unique(written_.begin(), written_.end(),
                               [](const FilledBlock& a, const FilledBlock& b) { return a.block == b.block; }),
                   written_.end());
    if (auto committed = entry_.commit(written_); !committed) {
        stop_filling("cannot keep what was written: " + committed.error().detail);
    }
    written_.clear();
}

void CacheFiller::stop_filling(const std::string& why) {
    std::deque<Piece> dropped;
    {
        std::lock_guard lock(mutex_);
        if (stopped_) {
            return;
        }
        stopped_ = true;
        queued_bytes_ = 0;
        dropped.swap(queue_);
    }
    room_.notify_all();
    for (Piece& piece : dropped) {
        if (piece.done) {
            piece.done(); // its reader waits for it
        }
    }
    warn(name_ + ": " + why + "; the load goes on without caching it");
}

} // namespace ringload::object_cache
