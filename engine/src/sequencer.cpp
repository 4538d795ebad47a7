// engine/src/sequencer.cpp
#include "ringload/engine/sequencer.hpp"

namespace ringload {

void Sequencer::submit(std::uint64_t offset_bytes, std::uint64_t length_bytes, std::function<void()> work) {
    std::unique_lock lock(mutex_);
    if (abandoned_) {
        return; // `work` dies after the lock is released
    }
    parked_.emplace(offset_bytes, Piece{length_bytes, std::move(work)});
    if (running_) {
        return; // the running thread will reach this piece
    }
    running_ = true;
    for (;;) {
        auto next = parked_.find(next_offset_bytes_);
        if (next == parked_.end() || abandoned_) {
            running_ = false;
            return;
        }
        Piece piece = std::move(next->second);
        parked_.erase(next);
        lock.unlock();
        piece.work();
        piece.work = nullptr; // drop what the work captured (its chunk) before taking the lock
        lock.lock();
        next_offset_bytes_ += piece.length_bytes;
    }
}

void Sequencer::abandon() {
    std::map<std::uint64_t, Piece> dropped;
    {
        std::lock_guard lock(mutex_);
        abandoned_ = true;
        dropped.swap(parked_);
    }
    // `dropped` dies here, outside the lock: what the pieces held may take other locks.
}

} // namespace ringload
