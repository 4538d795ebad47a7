// engine/include/ringload/engine/stage.hpp
//
// One step of a record's way from the ring to its destination. A StageGraph cuts each chunk
// into pieces, one per record it overlaps, and hands each piece to the record's first stage;
// each stage does its one job and passes the piece on, saying where its bytes are now:
//
//  chunk:  [ ...record 3's data.... ][ hdr 4 | record 4's data ... ]
//  piece:  [ 3: bytes 7M..8M       ]          [ 4: bytes 0..3M    ]
//  stages: decrypt -> destination (host arena, or GPU) -> hash (reads where the destination says)
//
// Stages are built per record (the state they keep is that record's), by the format's graph
// builder, in the order the bytes must meet them. process() runs on the worker pool,
// concurrently for the pieces of one record and in any order. A stage passes a piece on only
// once its own work on those bytes is done (a hash: after hashing them, and the last piece
// only when the sums matched): the graph hands a record over when all its bytes have left
// the last stage (StageGraph::on_record_done).
#pragma once

#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace ringload {

// Data bytes [begin, end) of one record (offsets within its data), and where they are now.
struct Piece {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    // The bytes, in host memory: the slot they were read into, staging, or the record's host
    // destination. Each data byte reaches exactly one piece, so the stage holding it may change it.
    std::byte* bytes = nullptr;
    // What keeps `bytes` valid after process() returns (the chunk, staging); null when they are
    // the destination itself, which lives as long as the load.
    std::shared_ptr<const void> keep_alive;
    bool at_destination = false; // `bytes` is where the record's host destination keeps them
    std::uint64_t length() const noexcept { return end - begin; }
};

// Where a stage reports a failure found outside process() (in-order work run later, by
// another thread); the graph names the record and stops the run.
class FailureSink {
public:
    virtual void fail(Error error) noexcept = 0;

protected:
    ~FailureSink() = default;
};

class Stage;

// The stages after one: calling it hands a piece to the next stage (nothing when last).
class StageChain {
public:
    StageChain() = default;
    explicit StageChain(std::span<const std::unique_ptr<Stage>> rest) : rest_(rest) {}
    Result<void> operator()(Piece piece) const;

private:
    std::span<const std::unique_ptr<Stage>> rest_;
};

class Stage {
public:
    virtual ~Stage() = default;
    virtual std::string_view name() const = 0;
    // Does this stage's job on the piece and passes it on (pass()). Errors name no record: the
    // graph adds that.
    virtual Result<void> process(Piece piece) = 0;
    // Once, on the loop thread, after every chunk came back: the record's final checks.
    virtual Result<void> finish() { return {}; }
    // The run stops early: drop what is held for later work (chunks, staging), now and from now on.
    virtual void abandon() noexcept {}
    // Whether the stage works as well on bytes the source read straight into the record's host
    // destination (in place, never in a slot): false for one that must see them first.
    virtual bool accepts_bytes_in_place() const noexcept { return false; }

    // Called by the graph when it takes the stage.
    void attach(FailureSink& failures, StageChain next) noexcept {
        failures_ = &failures;
        next_ = next;
    }

protected:
    Result<void> pass(Piece piece) const { return next_(std::move(piece)); }
    void report(Error error) const noexcept { failures_->fail(std::move(error)); }

private:
    FailureSink* failures_ = nullptr;
    StageChain next_;
};

// The stage that puts bytes where the record goes (host memory, a GPU): it passes each piece
// on saying where its bytes can be read afterwards (the host destination itself, so that the
// slot goes back at once; or the slot, kept alive until the device copy is done).
class Destination : public Stage {
public:
    // Host memory of data byte `offset_bytes` when the record goes to host memory: a transform
    // that makes new bytes (decryption) writes them there directly. Null for device memory.
    virtual std::byte* host_place(std::uint64_t offset_bytes) const noexcept = 0;
    // Page-locked host memory where a transform gathers bytes before passing them on (a cipher
    // chunk that straddles slots, on its way to a device).
    virtual Result<std::shared_ptr<std::byte>> staging(std::size_t length_bytes) = 0;
};

inline Result<void> StageChain::operator()(Piece piece) const {
    if (rest_.empty()) {
        return {};
    }
    return rest_.front()->process(std::move(piece));
}

} // namespace ringload
