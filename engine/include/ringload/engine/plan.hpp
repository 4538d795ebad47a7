// engine/include/ringload/engine/plan.hpp
//
// What to read (byte ranges of the source) and who handles the bytes (a ChunkHandler, the
// format's stage graph). The executor splits ranges into chunks the size of a ring slot:
//
//  source:  [  range 0 ..................... ][ gap ][ range 1 ...... ]
//  chunks:  [ chunk 0 ][ chunk 1 ][ chunk 2 ]        [ chunk 3 ][ c 4 ]
//  ring:    [ slot 5  ][ slot 6  ][ slot 7  ]        [ slot 0  ][ s 1 ]
//
// Each chunk is handed to the handler on the worker pool; its slot goes back to the ring when
// the last reference to the chunk dies, which may be after in-order work (hashing) completed.
#pragma once

#include "ringload/engine/buffer_ring.hpp"
#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ringload {

struct ReadRange {
    std::uint64_t offset_bytes = 0;
    std::uint64_t length_bytes = 0;
    std::uint64_t end_bytes() const noexcept { return offset_bytes + length_bytes; }
};

struct Plan {
    std::vector<ReadRange> ranges; // sorted, non-overlapping
    // A range read before all the others (then the rest in order): a small record, so that a
    // load whose first record is large hands a tensor over early (StageGraph::create).
    std::optional<std::size_t> read_first;
    // The plan's last bytes are read in quarter-slot windows (the last two rings' worth): for a
    // handler whose work runs through the bytes in order (a signed file's SHA-256), which can
    // only start on the last reads once they are in. A disk that completes its queue in
    // batches (this VM's: 32 reads of 4 MiB together, every 37 ms) otherwise hands it a whole
    // ring's worth at the very end, hashed after every read is over (20-40 ms of a 1 s load).
    bool taper_end = false;
    std::uint64_t total_bytes() const noexcept;
};

// A filled slot and which source bytes it holds. Shared: pieces queued for in-order work keep
// it (and so its slot) alive.
class Chunk {
public:
    Chunk(SlotLease slot, std::uint64_t source_offset_bytes, std::size_t lead_bytes, std::size_t length_bytes,
          const std::byte* in_place = nullptr)
        : slot_(std::move(slot)),
          source_offset_bytes_(source_offset_bytes),
          lead_bytes_(lead_bytes),
          length_bytes_(length_bytes),
          in_place_(in_place) {}
    // Source bytes [offset, offset + length) of `whole`, which it keeps alive: the part of a
    // chunk a handler passes on to another (SignedFileCheck reads whole files for one whose
    // plan wants only some of their bytes).
    Chunk(std::shared_ptr<const Chunk> whole, std::uint64_t source_offset_bytes, std::size_t length_bytes)
        : source_offset_bytes_(source_offset_bytes),
          length_bytes_(length_bytes),
          in_place_(whole->bytes().data() + (source_offset_bytes - whole->source_offset_bytes())),
          whole_(std::move(whole)) {}

    // Source bytes [source_offset, source_offset + length) as they sit in the slot, or where
    // they were read in place (then the slot only counted the read in flight).
    std::span<const std::byte> bytes() const noexcept {
        return in_place_ != nullptr ? std::span<const std::byte>(in_place_, length_bytes_)
                                    : slot_.bytes().subspan(lead_bytes_, length_bytes_);
    }
    // The same bytes, writable: for a handler that transforms them where they lie (decrypting
    // in the slot before a device copy). Each source byte reaches exactly one process() call,
    // so the handler that got it may change it.
    std::span<std::byte> mutable_bytes() const noexcept {
        return in_place_ != nullptr ? std::span<std::byte>(const_cast<std::byte*>(in_place_), length_bytes_)
                                    : slot_.bytes().subspan(lead_bytes_, length_bytes_);
    }
    std::uint64_t source_offset_bytes() const noexcept { return source_offset_bytes_; }
    std::uint64_t source_end_bytes() const noexcept { return source_offset_bytes_ + length_bytes_; }

private:
    SlotLease slot_;
    std::uint64_t source_offset_bytes_ = 0;
    std::size_t lead_bytes_ = 0; // alignment fix-up at the front of the slot
    std::size_t length_bytes_ = 0;
    const std::byte* in_place_ = nullptr;
    std::shared_ptr<const Chunk> whole_; // a part of a chunk: the chunk
};

using ChunkPtr = std::shared_ptr<const Chunk>;

// The format side of a run. process() runs on the worker pool, concurrently and in any order;
// it reports failures with a Result. Work it defers (in-order hashing) holds the ChunkPtr.
class ChunkHandler {
public:
    virtual ~ChunkHandler() = default;
    virtual Result<void> process(const ChunkPtr& chunk) = 0;
    // Source ranges whose bytes go unchanged to one place each (a plain tensor's data), sorted:
    // with a source that accepts_any_destination(), they are read there directly and then
    // handed to process() as chunks whose bytes() already are in place. `alignment`: the
    // source's (O_DIRECT: 4096), which a read's offset, length and memory must all keep; only
    // destinations that lie at the same offset from an alignment boundary as their source
    // bytes qualify, and only their aligned interior (the ragged ends go through slots).
    virtual std::vector<ReadRange> in_place_ranges(std::size_t alignment) const {
        (void)alignment;
        return {};
    }
    // Where source bytes [offset, offset + length), inside one in_place_ranges() entry, go.
    virtual std::byte* in_place_destination(std::uint64_t offset_bytes) const {
        (void)offset_bytes;
        return nullptr;
    }
    // Called once on the loop thread after every chunk was released: final checks.
    virtual Result<void> finish() = 0;
    // The run stops early (a failure, a cancel): drop every chunk kept for later work, now and
    // from now on, so that every slot comes back. process() may still be running.
    virtual void abandon() noexcept {}
};

} // namespace ringload
