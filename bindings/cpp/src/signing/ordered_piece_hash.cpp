// bindings/cpp/src/signing/ordered_piece_hash.cpp
#include "signing/ordered_piece_hash.hpp"

#include <algorithm>

namespace ringload {

OrderedPieceHash::OrderedPieceHash(std::uint64_t begin_bytes, std::vector<std::uint64_t> piece_ends, OnPiece on_piece)
    : piece_ends_(std::move(piece_ends)),
      on_piece_(std::move(on_piece)),
      sequencer_(begin_bytes),
      hashed_end_bytes_(begin_bytes) {}

void OrderedPieceHash::add(std::uint64_t offset_bytes, std::span<const std::byte> bytes,
                           std::shared_ptr<const void> keep) {
    sequencer_.submit(offset_bytes, bytes.size(), [this, bytes, offset_bytes, keep = std::move(keep)] {
        queue_in_order(bytes, offset_bytes, keep);
    });
}

// Hands the bytes, in file order, to the hashing threads, cut at piece ends: each piece's
// last job finishes its digest before the next piece's first job runs.
void OrderedPieceHash::queue_in_order(std::span<const std::byte> bytes, std::uint64_t offset_bytes,
                                      const std::shared_ptr<const void>& keep) {
    while (!bytes.empty()) {
        const auto piece = std::upper_bound(piece_ends_.begin(), piece_ends_.end(), offset_bytes);
        if (piece == piece_ends_.end()) {
            return; // past the last piece: not hashed
        }
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), *piece - offset_bytes));
        const std::uint64_t end = offset_bytes + take;
        hash_stream_.add({{&sha_, bytes.first(take)}, keep, [this, end] { hashed_to(end); }});
        bytes = bytes.subspan(take);
        offset_bytes = end;
    }
}

void OrderedPieceHash::hashed_to(std::uint64_t end_bytes) {
    hashed_end_bytes_ = end_bytes;
    for (; next_piece_ < piece_ends_.size() && piece_ends_[next_piece_] == end_bytes; ++next_piece_) {
        on_piece_(next_piece_, sha_.finish()); // and sha_ starts the next piece empty
    }
}

std::uint64_t OrderedPieceHash::wait() {
    hash_stream_.wait_idle();
    if (!abandoned_.load(std::memory_order_acquire)) {
        hashed_to(hashed_end_bytes_); // an empty piece where the bytes end (an empty file's digest)
    }
    return hashed_end_bytes_;
}

void OrderedPieceHash::abandon() noexcept {
    abandoned_.store(true, std::memory_order_release);
    sequencer_.abandon();
    hash_stream_.drop(); // and the bytes queued with it: they hold slots
}

} // namespace ringload
