// bindings/cpp/src/write/written_digest.hpp
//
// The SHA-256 of a file as its write fills it (WriteOptions::sign_key_file): the format's
// producer wrapped, each window hashed in file order from the slot it was filled in, just
// before it is written. A window filled ahead of the one the hash waits for is copied aside
// and hashed when its turn comes (the slot goes on to the disk meanwhile): at most the ring's
// worth of bytes. A format that patches pages after the run (torch zip's CRC32s) makes the
// digest invalid(): the caller hashes the written file then.
//
// Thread: window_filled() from any worker at once; digest() after the run.
#pragma once

#include "ringload/engine/hashes.hpp"
#include "ringload/engine/write_plan.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace ringload {

class WrittenDigest final : public PieceProducer {
public:
    explicit WrittenDigest(PieceProducer& inner) : inner_(inner) {}

    Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) override {
        return inner_.produce_part(piece, from, dst);
    }
    Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                               std::span<std::byte> second) override {
        return inner_.produce_whole(piece, first, second);
    }
    void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) override;

    // Pages were written again after the run: the windows' bytes are not the file's.
    void invalidate() noexcept { valid_ = false; }
    // The digest of bytes [0, length_bytes), or nothing when they were not all hashed in order.
    std::optional<Sha256Digest> digest(std::uint64_t length_bytes);

private:
    PieceProducer& inner_;
    std::mutex mutex_;
    Sha256 sha_;
    std::uint64_t next_bytes_ = 0;
    bool hashing_ = false;
    bool valid_ = true;
    std::map<std::uint64_t, std::vector<std::byte>> parked_;
};

} // namespace ringload
