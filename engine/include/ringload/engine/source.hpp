// engine/include/ringload/engine/source.hpp
//
// Where bytes come from: a file (io/file_source.hpp), an HTTP/1.1 or HTTP/2 range server
// (io/http_source.hpp, io/http2_source.hpp), S3 (io/s3_source.hpp), Redis (io/redis_source.hpp)
// and the tests' in-memory fakes (tests/support/). The engine only ever asks for "up to N bytes
// at offset X into this buffer", which maps onto a pread, an io_uring read and an HTTP range GET
// alike.
//
// Contract:
//   - read_some_at may complete short (a network body cut mid-way, EOF). The caller resumes
//     from the byte where it stopped; 0 bytes means end of source.
//   - Bulk reads into ring slots honour alignment_bytes(): offset, length and buffer address
//     are multiples of it (O_DIRECT needs this; network sources say 1).
//   - read_small_at serves metadata reads (headers, indexes) of any alignment into any buffer.
//   - Errors name the source (its name()) and what failed.
// Thread: the loop thread; a source may hop to other threads internally.
#pragma once

#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ringload {

// A bulk read's destination: a window inside a leased slot, or, for a source that
// accepts_any_destination(), the bytes' final place (`in_place`: a tensor's memory).
struct ReadTarget {
    const SlotLease* slot = nullptr;
    std::size_t slot_offset_bytes = 0;
    std::size_t length_bytes = 0;
    std::byte* in_place = nullptr;

    std::span<std::byte> bytes() const {
        return in_place != nullptr ? std::span<std::byte>(in_place, length_bytes)
                                   : slot->bytes().subspan(slot_offset_bytes, length_bytes);
    }
};

class Source {
public:
    virtual ~Source() = default;

    virtual const std::string& name() const = 0;
    virtual std::uint64_t size_bytes() const = 0;
    virtual std::size_t alignment_bytes() const = 0;
    // "O_DIRECT io_uring", "buffered pread", ...: for summaries and logs.
    virtual std::string describe() const = 0;
    // Whether bulk reads go through the loop's io_uring, so that registering the ring's slots
    // as fixed buffers pays off.
    virtual bool uses_io_uring() const { return false; }
    // Whether bulk reads may go to any memory (ReadTarget::in_place), not only ring slots: a
    // network source copies from its socket or receive buffer anyway, and a file's reads are
    // a DMA or a page-cache copy to wherever they are pointed, so either can put tensor data
    // straight where it belongs and save the slot-to-tensor copy (with alignment_bytes() > 1,
    // only into memory that keeps that alignment: ChunkHandler::in_place_ranges).
    virtual bool accepts_any_destination() const { return false; }
    // What identifies the object's version at its source ("734003200 bytes, ETag \"65f2-2bc\""),
    // for a cache to tell whether what it kept is still the object; "" when the source has no
    // such thing (nothing of it is cached then). Known once the source is open.
    virtual std::string version() const { return {}; }
    // The read size (ring slot size) that suits it when the caller has no preference.
    virtual std::size_t preferred_read_bytes() const { return 4 << 20; }

    virtual Task<Result<std::size_t>> read_some_at(std::uint64_t offset_bytes, ReadTarget target) = 0;
    virtual Task<Result<std::size_t>> read_small_at(std::uint64_t offset_bytes, std::span<std::byte> dst) = 0;

    // The run reading from it has stopped (cancelled, or failed elsewhere): the reads in flight
    // may end now with an error instead of being waited for, and none of them is retried. A
    // network source closes its connections (a stalled server would otherwise hold the stop
    // for its timeout times its attempts). Reads that start afterwards (another run) are served
    // as before. Loop thread.
    virtual void abandon_reads() {}

    // A load's reads are over (it ended, well or not): a source that keeps what it read (the
    // cache) makes that last now, not only when it is destroyed (a process may exit without).
    // Called by the loading thread, with no read in flight.
    virtual void reads_done() {}
};

// Calls source.reads_done() when it goes out of scope: at every way out of a load.
class ReadsDoneAtExit {
public:
    explicit ReadsDoneAtExit(Source& source) : source_(source) {}
    ~ReadsDoneAtExit() { source_.reads_done(); }
    ReadsDoneAtExit(const ReadsDoneAtExit&) = delete;
    ReadsDoneAtExit& operator=(const ReadsDoneAtExit&) = delete;

private:
    Source& source_;
};

// Reads exactly dst.size() bytes with read_small_at; EOF before that is errc::truncated.
Task<Result<void>> read_exactly_at(Source& source, std::uint64_t offset_bytes, std::span<std::byte> dst);

} // namespace ringload
