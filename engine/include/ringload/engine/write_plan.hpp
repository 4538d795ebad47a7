// engine/include/ringload/engine/write_plan.hpp
//
// The write side of the engine: a file described as contiguous pieces, produced by a format
// into ring slots on the worker pool and written by a sink, one slot-sized window at a time.
//
//  file:     [hdr|index ][h0| data 0 .............. ][h1| c0 | c1 | c2 ][s]
//  windows:  |<-- slot 0 -->|<-- slot 1 -->|<-- slot 2 -->|<-- slot 3 -->|
//
// Most pieces can be produced in parts (a copy), and are cut at window boundaries. A "whole"
// piece (a sealed cipher chunk: its MAC needs all of it) is produced in one call, into two
// slots when it straddles a boundary. Side jobs (hashing from the caller's memory) run on the
// same pool, each posted when the window holding its start is.
#pragma once

#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ringload {

struct WritePiece {
    std::uint64_t offset_bytes = 0;
    std::uint64_t length_bytes = 0;
    bool whole = false;    // produced in one call (at most one slot long)
    std::uint64_t tag = 0; // what the producer makes of it

    std::uint64_t end_bytes() const noexcept { return offset_bytes + length_bytes; }
};

// Work beside the windows, done in steps: run() does one step and says whether another is
// due. Each next step goes to the back of the pool's queue, so a long job (hashing a 160 MB
// embedding) never holds a worker away from the window fills for long.
struct SideJob {
    std::uint64_t start_offset_bytes = 0; // posted with the window that holds this byte
    std::function<Result<bool>()> run;    // true: call again
};

struct WritePlan {
    std::vector<WritePiece> pieces; // sorted, contiguous, from byte 0 to length_bytes
    std::uint64_t length_bytes = 0;
    std::vector<SideJob> side_jobs; // sorted by start_offset_bytes
};

// What a format supplies. Called on worker threads, for disjoint pieces at once.
class PieceProducer {
public:
    virtual ~PieceProducer() = default;
    // Bytes [from, from + dst.size()) of a piece that is not whole.
    virtual Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) = 0;
    // Every byte of a whole piece: `first`, then `second` (empty unless it straddles two slots).
    virtual Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                                       std::span<std::byte> second) = 0;
    // A window's final bytes, just before they are written (a format may keep some of them).
    virtual void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
        (void)offset_bytes;
        (void)bytes;
    }
};

// A bulk write's source: a window inside a leased slot.
struct SlotBytes {
    const SlotLease* slot = nullptr;
    std::size_t slot_offset_bytes = 0;
    std::size_t length_bytes = 0;

    std::span<const std::byte> bytes() const { return slot->bytes().subspan(slot_offset_bytes, length_bytes); }
};

// Where bytes go: a file (io/file_sink). Contract mirrors Source: write_some_at may complete
// short (the caller resumes), bulk writes honour alignment_bytes(), errors name the sink.
// Thread: the loop thread.
class WriteSink {
public:
    virtual ~WriteSink() = default;
    virtual const std::string& name() const = 0;
    virtual std::size_t alignment_bytes() const = 0;
    virtual std::string describe() const = 0; // "O_DIRECT io_uring", ...
    virtual bool uses_io_uring() const { return false; }
    virtual Task<Result<std::size_t>> write_some_at(std::uint64_t offset_bytes, SlotBytes source) = 0;
};

} // namespace ringload
