// bindings/cpp/src/signing/ordered_piece_hash.hpp
//
// One file's bytes, arriving in any order, hashed in file order on the process's hashing
// threads (HashStream), and cut into pieces: the SHA-256 of each piece (a signed file's
// shards, or the whole file) goes to `on_piece` as soon as its last byte is in.
//
//   chunks:  [ c2 ][ c0 ][ c1 ][ c4 ][ c3 ] ...          in the order their reads end
//   order:   a Sequencer queues each once every byte before it is queued
//   pieces:  |----- piece 0 -----|----- piece 1 -----|-- 2 --|    (piece_ends)
//
// Used by a signed file's load (SignedFileCheck: each digest compared as it completes) and by
// `ringload verify` (piece_digests.hpp: each digest kept).
//
//     OrderedPieceHash hash(0, piece_ends(size, shard), [&](std::size_t k, const Sha256Digest& d) { ... });
//     hash.add(chunk->source_offset_bytes(), chunk->bytes(), chunk); // any thread, any order
//     std::uint64_t end = hash.wait(); // every byte added is hashed: `end` of the bytes in order
//
// Thread: add() from any thread; wait() and abandon() from any other; on_piece runs on a
// hashing thread, one piece at a time, in order.
#pragma once

#include "ringload/engine/hash_stream.hpp"
#include "ringload/engine/laned_sha256.hpp"
#include "ringload/engine/sequencer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace ringload {

class OrderedPieceHash {
public:
    using OnPiece = std::function<void(std::size_t piece, const Sha256Digest& digest)>;

    // Pieces [begin, ends[0]), [ends[0], ends[1]), ...; `piece_ends` sorted. Bytes past the
    // last end are not hashed.
    OrderedPieceHash(std::uint64_t begin_bytes, std::vector<std::uint64_t> piece_ends, OnPiece on_piece);

    // Source bytes [offset, offset + size), which `keep` owns until they are hashed.
    void add(std::uint64_t offset_bytes, std::span<const std::byte> bytes, std::shared_ptr<const void> keep);
    // Waits until every byte added is hashed (and each completed piece's on_piece has run);
    // returns where the bytes hashed in order end. An empty piece at that end completes here.
    std::uint64_t wait();
    // No more hashing: bytes parked or queued are dropped (and what keeps them), later adds
    // ignored, a running step waited for. Afterwards on_piece is never called.
    void abandon() noexcept;

private:
    void queue_in_order(std::span<const std::byte> bytes, std::uint64_t offset_bytes,
                        const std::shared_ptr<const void>& keep);
    void hashed_to(std::uint64_t end_bytes); // on a hashing thread, after the bytes up to `end`

    std::vector<std::uint64_t> piece_ends_;
    OnPiece on_piece_;
    Sequencer sequencer_;
    // Only the hash stream's one running job touches these (wait() after wait_idle()).
    LanedSha256 sha_;
    std::uint64_t hashed_end_bytes_;
    std::size_t next_piece_ = 0;
    std::atomic<bool> abandoned_{false};
    // Last: destroyed (its jobs dropped, a running one waited for) before what they touch.
    HashStream hash_stream_;
};

} // namespace ringload
