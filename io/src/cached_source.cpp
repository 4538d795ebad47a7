// io/src/cached_source.cpp
//
// A remote source behind its cache entry (object_cache.hpp). Bulk reads are aligned to the
// 64 KiB blocks. Two shapes, chosen when it opens:
//   whole: the entry holds every block of the current version. Bulk reads go to the entry's data
//     file as to a local file (O_DIRECT io_uring into the ring's slots), each block checked
//     against its CRC32 before the engine sees it; the remote source is opened only if a block
//     fails (or was opened by the HEAD that checked the version).
//   filling: reads are served run by run: blocks the entry holds from its data file (checked the
//     same way), the others from the remote source, and kept by the filler (cache_filler.hpp)
//     where this process claimed them.
#include "ringload/io/object_cache.hpp"

#include "cache_entry.hpp"
#include "cache_filler.hpp"
#include "off_loop.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/io/url.hpp"

#include <algorithm>
#include <cstring>

namespace ringload {
namespace {

using object_cache::block_bytes;
using object_cache::block_crc;
using object_cache::CacheEntry;
using object_cache::CacheFiller;
using object_cache::warn;

// Small reads up to this size are widened to whole blocks when filling (read_remote).
constexpr std::uint64_t widened_small_read_bytes = 16 << 20;

class CachedSource final : public Source {
public:
    struct Parts {
        asio::io_context* loop = nullptr;
        const SourceKind* kind = nullptr;
        std::string uri;
        NetworkOptions network;
        std::unique_ptr<CacheEntry> entry;
        std::unique_ptr<Source> remote; // null: opened on the first read the entry cannot serve
        std::unique_ptr<Source> file;   // the entry's data file
        bool whole = false;
    };

    explicit CachedSource(Parts parts) : parts_(std::move(parts)) {
        name_ = parts_.remote ? parts_.remote->name() : uri_for_messages(parts_.uri); // no secrets
        if (!parts_.whole) {
            filler_ = std::make_unique<CacheFiller>(*parts_.entry, name_);
        }
    }

    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return parts_.entry->size_bytes(); }
    std::string version() const override { return parts_.entry->version(); }
    // Reads in whole blocks: each is checked (whole entry) or kept (filling) as one, and a slice's
    // edges are kept too, so that the same slices load from the entry next time. (The network's
    // reads straight into tensors need alignment 1: a fill reads through the ring's slots.)
    std::size_t alignment_bytes() const override { return std::max(block_bytes, parts_.file->alignment_bytes()); }
    bool uses_io_uring() const override { return parts_.whole && parts_.file->uses_io_uring(); }
    std::size_t preferred_read_bytes() const override {
        return parts_.whole ? parts_.file->preferred_read_bytes() : parts_.remote->preferred_read_bytes();
    }
    std::string describe() const override {
        if (parts_.whole) {
            return "cache entry " + parts_.entry->path() + " (" + parts_.file->describe() + ")";
        }
        return parts_.remote->describe() + ", kept in cache entry " + parts_.entry->path() + " (" +
               std::to_string(parts_.entry->held_bytes()) + " bytes held before)";
    }
    void abandon_reads() override {
        if (parts_.remote) {
            parts_.remote->abandon_reads();
        }
        parts_.file->abandon_reads();
    }

    // What this load filled is committed before it returns.
    void reads_done() override {
        if (filler_) {
            filler_->flush();
        }
    }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset_bytes, ReadTarget target) override {
        if (parts_.whole && offset_bytes % block_bytes == 0) {
            auto reading = read_whole_blocks(offset_bytes, target);
            co_return co_await std::move(reading);
        }
        auto reading = read_run(offset_bytes, target.bytes(), &target);
        co_return co_await std::move(reading);
    }

    Task<Result<std::size_t>> read_small_at(std::uint64_t offset_bytes, std::span<std::byte> dst) override {
        auto reading = read_run(offset_bytes, dst, nullptr);
        co_return co_await std::move(reading);
    }

private:
    // A whole entry's bulk read: the data file's bytes, each block checked.
    Task<Result<std::size_t>> read_whole_blocks(std::uint64_t offset_bytes, ReadTarget target) {
        auto reading = parts_.file->read_some_at(offset_bytes, target);
        RL_CO_TRY(got, co_await std::move(reading));
        const bool to_end = offset_bytes + got >= size_bytes();
        const std::size_t usable = to_end ? got : got - got % block_bytes;
        if (usable == 0) {
            auto rest = read_run(offset_bytes, target.bytes(), &target); // a short read inside a block
            co_return co_await std::move(rest);
        }
        const std::span<std::byte> bytes = target.bytes().first(usable);
        // Checked on the checker's thread: the loop meanwhile serves the other reads.
        std::vector<std::uint64_t> failed;
        auto checking = when_done(parts_.loop->get_executor(), [&](std::function<void()> done) {
            checker_.post([&, done = std::move(done)] {
                for (std::size_t at = 0; at < usable; at += block_bytes) {
                    const std::uint64_t index = (offset_bytes + at) / block_bytes;
                    if (block_crc(bytes.subspan(at, std::min(block_bytes, usable - at))) != parts_.entry->crc(index)) {
                        failed.push_back(index);
                    }
                }
                done();
            });
        });
        co_await std::move(checking);
        for (const std::uint64_t index : failed) {
            const std::size_t at = static_cast<std::size_t>(index * block_bytes - offset_bytes);
            auto refetching = refetch(index, bytes.subspan(at, std::min(block_bytes, usable - at)));
            RL_CO_TRY_VOID(co_await std::move(refetching));
        }
        co_return usable;
    }

    // One run of `dst` at `offset_bytes`: the blocks the entry holds from its file, or those it
    // does not from the remote source (kept as they come). A short read: the engine asks again.
    Task<Result<std::size_t>> read_run(std::uint64_t offset_bytes, std::span<std::byte> dst, const ReadTarget* target) {
        if (offset_bytes >= size_bytes() || dst.empty()) {
            co_return std::size_t{0};
        }
        const std::uint64_t end = std::min<std::uint64_t>(offset_bytes + dst.size(), size_bytes());
        const std::uint64_t first = offset_bytes / block_bytes;
        const std::uint64_t last = (end - 1) / block_bytes;
        std::uint64_t past = first;
        const bool held = parts_.entry->holds(first);
        while (past <= last && parts_.entry->holds(past) == held) {
            ++past;
        }
        const std::uint64_t run_end = std::min(end, past * block_bytes);
        if (held) {
            auto reading = read_held(offset_bytes, dst.first(static_cast<std::size_t>(run_end - offset_bytes)));
            RL_CO_TRY(got, co_await std::move(reading));
            if (got > 0) {
                co_return got;
            }
            // The first block failed its check (and is forgotten): the source has it.
        }
        auto reading = read_remote(offset_bytes, dst.first(static_cast<std::size_t>(run_end - offset_bytes)), target);
        co_return co_await std::move(reading);
    }

    // Held blocks, read whole from the data file and checked, then the part asked for copied
    // out; ends before the first block that fails its check (0 when that is the first).
    Task<Result<std::size_t>> read_held(std::uint64_t offset_bytes, std::span<std::byte> dst) {
        const std::uint64_t begin = offset_bytes / block_bytes * block_bytes;
        const std::uint64_t end =
            std::min(size_bytes(), (offset_bytes + dst.size() + block_bytes - 1) / block_bytes * block_bytes);
        std::vector<std::byte> scratch(static_cast<std::size_t>(end - begin)); // reads may overlap in time
        auto reading = read_exactly_at(*parts_.file, begin, scratch);
        RL_CO_TRY_VOID(co_await std::move(reading));
        std::uint64_t good_end = offset_bytes + dst.size();
        for (std::uint64_t at = begin; at < end; at += block_bytes) {
            const auto block = std::span<const std::byte>(scratch).subspan(
                static_cast<std::size_t>(at - begin), static_cast<std::size_t>(std::min(block_bytes, end - at)));
            if (block_crc(block) != parts_.entry->crc(at / block_bytes)) {
                corrupt(at / block_bytes);
                good_end = std::min(good_end, std::max(at, offset_bytes));
                break;
            }
        }
        const auto count = static_cast<std::size_t>(good_end - offset_bytes);
        std::memcpy(dst.data(), scratch.data() + (offset_bytes - begin), count);
        co_return count;
    }

    // Bytes the entry does not hold, from the source, kept where this process claims their blocks.
    Task<Result<std::size_t>> read_remote(std::uint64_t offset_bytes, std::span<std::byte> dst,
                                          const ReadTarget* target) {
        auto opening = remote();
        RL_CO_TRY(source, co_await std::move(opening));
        const std::uint64_t begin = offset_bytes / block_bytes * block_bytes;
        const std::uint64_t end =
            std::min(size_bytes(), (offset_bytes + dst.size() + block_bytes - 1) / block_bytes * block_bytes);
        if (target == nullptr && filler_ && end - begin <= widened_small_read_bytes) {
            // A small read (an index) is widened to its whole blocks, so that they are kept and
            // the same load next time finds its index in the entry.
            std::vector<std::byte> blocks(static_cast<std::size_t>(end - begin));
            auto reading = read_exactly_at(*source, begin, blocks);
            RL_CO_TRY_VOID(co_await std::move(reading));
            auto keeping = keep(begin, blocks);
            co_await std::move(keeping);
            std::memcpy(dst.data(), blocks.data() + (offset_bytes - begin), dst.size());
            co_return dst.size();
        }
        std::size_t got = 0;
        if (target != nullptr) {
            ReadTarget run = *target;
            run.length_bytes = dst.size();
            auto reading = source->read_some_at(offset_bytes, run);
            RL_CO_TRY(read, co_await std::move(reading));
            got = read;
        } else {
            auto reading = source->read_small_at(offset_bytes, dst);
            RL_CO_TRY(read, co_await std::move(reading));
            got = read;
        }
        auto keeping = keep(offset_bytes, dst.first(got));
        co_await std::move(keeping);
        co_return got;
    }

    // A whole entry's block that failed its check: read again from the source, and rewritten.
    Task<Result<void>> refetch(std::uint64_t index, std::span<std::byte> block) {
        corrupt(index);
        auto opening = remote();
        RL_CO_TRY(source, co_await std::move(opening));
        auto reading = read_exactly_at(*source, index * block_bytes, block);
        RL_CO_TRY_VOID(co_await std::move(reading));
        if (!filler_) {
            filler_ = std::make_unique<CacheFiller>(*parts_.entry, name_);
        }
        auto keeping = keep(index * block_bytes, block);
        co_await std::move(keeping);
        co_return Result<void>();
    }

    // Has the filler write the bytes of the blocks this process claims and nobody has committed,
    // straight from where they were read (a slot, which the engine reuses once this returns).
    Task<void> keep(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
        if (!filler_ || bytes.empty()) {
            co_return;
        }
        const std::uint64_t first = offset_bytes / block_bytes;
        const std::uint64_t last = (offset_bytes + bytes.size() - 1) / block_bytes;
        std::vector<bool> mine = claimed(first, last);
        const std::vector<bool> committed = parts_.entry->committed_since_open(first, last);
        for (std::size_t i = 0; i < mine.size(); ++i) {
            mine[i] = mine[i] && !committed[i];
        }
        const std::uint64_t end = offset_bytes + bytes.size();
        for (std::uint64_t block = first; block <= last;) {
            std::uint64_t past = block;
            while (past <= last && mine[past - first] == mine[block - first]) {
                ++past;
            }
            if (mine[block - first]) {
                const std::uint64_t from = std::max(offset_bytes, block * block_bytes);
                const std::uint64_t to = std::min(end, past * block_bytes);
                const auto run =
                    bytes.subspan(static_cast<std::size_t>(from - offset_bytes), static_cast<std::size_t>(to - from));
                auto writing = when_done(parts_.loop->get_executor(), [&](std::function<void()> done) {
                    filler_->write(from, run, std::move(done));
                });
                co_await std::move(writing);
            }
            block = past;
        }
    }

    // Which of blocks [first, last] this process may fill: all, unless another holds some (then
    // each is claimed alone: a read-once group's shares meet inside a block at their edges).
    std::vector<bool> claimed(std::uint64_t first, std::uint64_t last) {
        std::vector<bool> mine(static_cast<std::size_t>(last - first + 1), true);
        if (!parts_.entry->claim(first, last)) {
            for (std::uint64_t block = first; block <= last; ++block) {
                mine[block - first] = parts_.entry->claim(block, block);
            }
        }
        return mine;
    }

    void corrupt(std::uint64_t index) {
        parts_.entry->forget(index);
        warn(name_ + ": the block at byte " + std::to_string(index * block_bytes) + " of cache entry " +
             parts_.entry->path() + " does not match its CRC32; read from the source again");
    }

    // The remote source, opened on first need when the entry was whole. One that has changed
    // since the entry was filled fails the read: the entry's other bytes are of another version.
    Task<Result<Source*>> remote() {
        if (!parts_.remote) {
            auto opening = parts_.kind->open(*parts_.loop, parts_.uri, parts_.network);
            RL_CO_TRY(opened, co_await std::move(opening));
            if (opened->version() != parts_.entry->version()) {
                co_return fail(errc::io_error, opened->name() + ": changed since cache entry " + parts_.entry->path() +
                                                   " was filled (" + parts_.entry->version() + ", now " +
                                                   opened->version() + "): load it again");
            }
            if (!parts_.remote) { // another read may have opened it meanwhile
                parts_.remote = std::move(opened);
            }
        }
        co_return parts_.remote.get();
    }

    Parts parts_;
    std::string name_;
    std::unique_ptr<CacheFiller> filler_; // destroyed (committing) before parts_.entry
    HelperThread checker_;                // a whole entry's CRC32 checks
};

Task<Result<std::unique_ptr<Source>>> open_uncached(asio::io_context& loop, const SourceKind& kind, std::string uri,
                                                    const NetworkOptions& network) {
    auto opening = kind.open(loop, std::move(uri), network);
    co_return co_await std::move(opening);
}

// The remote source opened only to learn the object's version (a HEAD): the entry's version
// still, or null (it changed: a fill begins).
Task<Result<std::unique_ptr<Source>>> checked_remote(asio::io_context& loop, const SourceKind& kind,
                                                     const std::string& uri, const NetworkOptions& network,
                                                     const CacheEntry& entry) {
    NetworkOptions asking = network;
    asking.open_without_reading = true;
    auto opening = kind.open(loop, uri, asking);
    RL_CO_TRY(remote, co_await std::move(opening));
    if (remote->version() != entry.version()) {
        co_return std::unique_ptr<Source>();
    }
    co_return std::move(remote);
}

// Whether the entry may take the object: its version adopted (an older one dropped) and room
// made under the size limit. Says why not.
bool entry_takes(CacheEntry& entry, const Source& remote, const NetworkOptions& network) {
    const std::string version = remote.version();
    if (version.empty()) {
        warn(remote.name() + ": the source names no version of the object (no ETag or Last-Modified): not cached");
        return false;
    }
    const std::uint64_t max = network.cache_max_bytes;
    if (max != 0 && remote.size_bytes() > max) {
        warn(remote.name() + ": its " + std::to_string(remote.size_bytes()) + " bytes are more than the cache's " +
             std::to_string(max) + " (cache_max_bytes): not cached");
        return false;
    }
    auto adopted = entry.adopt(version, remote.size_bytes());
    if (!adopted || !*adopted) {
        warn(remote.name() + ": " +
             (adopted ? "another load is using the cache entry of an earlier version" : adopted.error().detail) +
             ": not cached");
        return false;
    }
    if (!object_cache::make_room(network.cache_dir, entry.path(), remote.size_bytes() - entry.held_bytes(), max)) {
        warn(remote.name() + ": its " + std::to_string(remote.size_bytes()) + " bytes do not fit the cache's " +
             std::to_string(max) + " (cache_max_bytes) beside the entries in use: not cached");
        return false;
    }
    return true;
}

} // namespace

Task<Result<std::unique_ptr<Source>>> open_cached_source(asio::io_context& loop, const SourceKind& kind,
                                                         std::string uri, NetworkOptions network) {
    if (network.cache_dir.empty()) {
        auto opening = open_uncached(loop, kind, std::move(uri), network);
        co_return co_await std::move(opening);
    }
    auto opened_entry = CacheEntry::open(network.cache_dir, uri);
    if (!opened_entry) {
        warn(uri_for_messages(uri) + ": " + opened_entry.error().detail + "; loading without the cache");
        auto opening = open_uncached(loop, kind, std::move(uri), network);
        co_return co_await std::move(opening);
    }
    CachedSource::Parts parts{&loop, &kind, uri, network, std::move(*opened_entry)};
    auto file = open_file_source(loop, parts.entry->data_path());
    if (!parts.entry->version().empty() && file) {
        parts.file = std::move(*file);
        parts.whole = parts.entry->complete();
        if (parts.whole && !network.cache_validate) {
            co_return std::make_unique<CachedSource>(std::move(parts)); // the source opens if a block fails
        }
        // The server is asked for the version alone (a HEAD), and serves what the entry lacks.
        auto checking = checked_remote(loop, kind, uri, network, *parts.entry);
        RL_CO_TRY(remote, co_await std::move(checking));
        if (remote) {
            parts.remote = std::move(remote);
            co_return std::make_unique<CachedSource>(std::move(parts));
        }
    }
    // No entry yet, or one of another version: a fill, through the source opened as usual.
    auto opening = open_uncached(loop, kind, uri, network);
    RL_CO_TRY(remote, co_await std::move(opening));
    if (!entry_takes(*parts.entry, *remote, network)) {
        co_return std::move(remote);
    }
    auto data = open_file_source(loop, parts.entry->data_path());
    if (!data) {
        warn(remote->name() + ": " + data.error().detail + ": not cached");
        co_return std::move(remote);
    }
    parts.file = std::move(*data);
    parts.whole = false;
    parts.remote = std::move(remote);
    co_return std::make_unique<CachedSource>(std::move(parts));
}

} // namespace ringload
