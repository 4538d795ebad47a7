// bindings/cpp/src/signing/piece_digests.cpp
#include "signing/piece_digests.hpp"

#include "run_on_loop.hpp"
#include "signing/ordered_piece_hash.hpp"

#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/model_load.hpp"

#include <boost/asio/io_context.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace ringload {
namespace {

// One file's ranges: [begin, ends[0]), [ends[0], ends[1]), ...; ranges[first ...] of the list.
struct FilePieces {
    const FolderFile* file = nullptr;
    std::size_t first = 0;
    std::uint64_t begin = 0;
    std::vector<std::uint64_t> ends;
};

Result<std::vector<FilePieces>> group_by_file(const std::vector<ByteRange>& ranges) {
    std::vector<FilePieces> files;
    for (std::size_t k = 0; k < ranges.size(); ++k) {
        const ByteRange& range = ranges[k];
        if (files.empty() || files.back().file != range.file) {
            files.push_back({range.file, k, range.begin, {}});
        } else if (files.back().ends.back() != range.begin) {
            return fail(errc::invalid_argument, range.file->path + ": its pieces to hash are not back to back");
        }
        files.back().ends.push_back(range.end);
    }
    return files;
}

// Every byte of the file's pieces, in order, into their digests.
class PieceDigests final : public ChunkHandler {
public:
    PieceDigests(const FilePieces& pieces, std::vector<std::string>& digests)
        : path_(pieces.file->path),
          end_(pieces.ends.back()),
          hash_(pieces.begin, pieces.ends, [&digests, first = pieces.first](std::size_t k, const Sha256Digest& digest) {
              digests[first + k].assign(reinterpret_cast<const char*>(digest.data()), digest.size());
          }) {}

    Result<void> process(const ChunkPtr& chunk) override {
        hash_.add(chunk->source_offset_bytes(), chunk->bytes(), chunk); // the chunk (its slot) until hashed
        return {};
    }
    Result<void> finish() override {
        const std::uint64_t hashed_end = hash_.wait();
        if (hashed_end != end_) {
            return fail(errc::io_error, path_ + ": only its bytes up to " + std::to_string(hashed_end) + " of " +
                                            std::to_string(end_) + " were hashed");
        }
        return {};
    }
    void abandon() noexcept override { hash_.abandon(); }

private:
    std::string path_;
    std::uint64_t end_;
    OrderedPieceHash hash_; // last: its jobs touch the digests through on_piece
};

// Files this small are read with pread and hashed on the thread that took them: a run's set-up
// (an io_uring, a ring, a worker thread) costs more than their bytes (a folder of 300 small
// configs: 0.7-0.9 s through runs, 5-9 ms this way).
constexpr std::uint64_t small_file_bytes = 8 << 20;

Result<void> hash_small_file(const FilePieces& pieces, std::vector<std::string>& digests) {
    const std::string& path = pieces.file->path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fail(errc::io_error, path + ": " + std::strerror(errno));
    }
    std::vector<std::byte> bytes(static_cast<std::size_t>(pieces.ends.back() - pieces.begin));
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t got =
            ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(pieces.begin + done));
        if (got <= 0) {
            const int error = errno;
            ::close(fd);
            return fail(got < 0 ? errc::io_error : errc::truncated,
                        path + ": " +
                            (got < 0 ? std::strerror(error)
                                     : "the file ends at byte " + std::to_string(pieces.begin + done) +
                                           " but its pieces run to byte " + std::to_string(pieces.ends.back())));
        }
        done += static_cast<std::size_t>(got);
    }
    ::close(fd);
    std::uint64_t begin = pieces.begin;
    for (std::size_t k = 0; k < pieces.ends.size(); ++k) {
        const Sha256Digest digest = sha256(std::span(bytes).subspan(static_cast<std::size_t>(begin - pieces.begin),
                                                                    static_cast<std::size_t>(pieces.ends[k] - begin)));
        digests[pieces.first + k].assign(reinterpret_cast<const char*>(digest.data()), digest.size());
        begin = pieces.ends[k];
    }
    return {};
}

Result<void> hash_file(const FilePieces& pieces, std::uint32_t slot_count, std::vector<std::string>& digests) {
    if (pieces.ends.back() - pieces.begin <= small_file_bytes) {
        return hash_small_file(pieces, digests);
    }
    asio::io_context loop{1};
    PieceDigests handler(pieces, digests);
    Plan plan;
    if (pieces.ends.back() > pieces.begin) {
        plan.ranges.push_back({pieces.begin, pieces.ends.back() - pieces.begin});
    }
    plan.taper_end = true; // the last reads are hashed after them: small ones
    RL_TRY(source, open_file_source(loop, pieces.file->path));
    RL_TRY(ring, BufferRing::create(loop, {.slot_count = slot_count}));
    WorkerPool pool(1); // process() only queues the chunk for the hashing threads
    RL_TRY_VOID(run_on_loop(loop, run_plan(*source, *ring, pool, plan, handler, {})));
    return {};
}

} // namespace

Result<std::vector<std::string>> hash_ranges(const std::vector<ByteRange>& ranges, std::size_t threads) {
    RL_TRY(files, group_by_file(ranges));
    std::vector<std::string> digests(ranges.size());
    // As a folder's load: two files per core at once, sharing one ring's reads in flight.
    const std::size_t cores = threads == 0 ? available_cores() : threads;
    const std::size_t at_once = std::clamp<std::size_t>(2 * cores, 1, std::max<std::size_t>(files.size(), 1));
    const std::uint32_t slot_count = slots_per_file(at_once); // sharing one ring's reads in flight
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex failure_mutex;
    std::optional<Error> failure;
    auto work = [&] {
        for (std::size_t k = next++; k < files.size() && !failed; k = next++) {
            if (auto hashed = hash_file(files[k], slot_count, digests); !hashed) {
                std::lock_guard lock(failure_mutex);
                failure = failure.value_or(hashed.error());
                failed = true;
            }
        }
    };
    std::vector<std::thread> helpers;
    for (std::size_t t = 1; t < at_once; ++t) {
        helpers.emplace_back(work);
    }
    work();
    for (std::thread& helper : helpers) {
        helper.join();
    }
    if (failure) {
        return *failure;
    }
    return digests;
}

} // namespace ringload
