// engine/include/ringload/engine/sequencer.hpp
//
// Runs the pieces of one byte stream (one tensor's record) in offset order, whatever order
// their chunks arrive in, without ever blocking a worker: a piece that arrives early is parked
// and run by the thread that completes its predecessor. SHA-256 needs this; copies do not.
//
//     Sequencer seq(record_offset);
//     seq.submit(piece_offset, piece_length, [chunk] { hash(chunk...); });
//
// Deadlock-free with a bounded ring because chunks are read in offset order: the piece every
// parked piece waits for already holds a slot.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace ringload {

class Sequencer {
public:
    explicit Sequencer(std::uint64_t start_offset_bytes) : next_offset_bytes_(start_offset_bytes) {}

    void submit(std::uint64_t offset_bytes, std::uint64_t length_bytes, std::function<void()> work);
    // The stream will not complete (the run failed): drops parked pieces, and with them what
    // they hold (slots), and every piece submitted from now on.
    void abandon();

private:
    struct Piece {
        std::uint64_t length_bytes = 0;
        std::function<void()> work;
    };

    std::mutex mutex_;
    std::uint64_t next_offset_bytes_ = 0;
    bool running_ = false;
    bool abandoned_ = false;
    std::map<std::uint64_t, Piece> parked_;
};

} // namespace ringload
