// engine/include/ringload/engine/stages/hash.hpp
//
// Checks a record's stored CRC32 and SHA-256: both run over a prefix the format gives (for
// tensorizer H', its header with the hash values zeroed) and then the data, in order, through
// a Sequencer, whatever order the pieces arrive in. Placed after the destination, it reads
// each piece where the destination left it readable: a host destination itself (the slot is
// already back in the ring, so a long in-order hash never stalls the reads), or the slot,
// kept alive until its turn, on the way to a device. Pieces go on to the next stage once
// hashed, the last one only once the sums matched.
//
//     auto hash = std::make_unique<Hash>(header_length, data_length);
//     ...   // once the header is read:
//     hash->arm(prefix, {{StoredDigest::Kind::sha256, 1, sha_bytes}});
//
// Thread: process() from any worker; arm() once, from the thread that read the header.
#pragma once

#include "ringload/engine/hashes.hpp"
#include "ringload/engine/sequencer.hpp"
#include "ringload/engine/stage.hpp"

#include <atomic>
#include <vector>

namespace ringload {

// A digest the file stores, to compare with the one computed.
struct StoredDigest {
    enum class Kind : std::uint8_t { crc32, sha256, unknown };
    Kind kind = Kind::unknown;
    std::uint8_t type_code = 0;   // the file's code for it (named when it is unknown)
    std::vector<std::byte> value; // 4 bytes (CRC32, as stored) or 32 (SHA-256)
};

class Hash final : public Stage {
public:
    // `header_length_bytes`: the record's header, whose place in the hash's order the prefix
    // given to arm() takes (one more byte of order, so that even an empty one comes first).
    Hash(std::uint64_t header_length_bytes, std::uint64_t data_length_bytes)
        : sequencer_(0), prefix_slot_bytes_(header_length_bytes + 1), data_length_bytes_(data_length_bytes) {}

    std::string_view name() const override { return "hash"; }
    // The prefix to hash first and what the sums must be; data pieces wait for it.
    void arm(std::vector<std::byte> prefix, std::vector<StoredDigest> stored);
    Result<void> process(Piece piece) override;
    Result<void> finish() override;
    void abandon() noexcept override;
    bool accepts_bytes_in_place() const noexcept override { return true; }

private:
    // In order: one piece of the hash input; the last one compares.
    void update(std::span<const std::byte> bytes, std::uint64_t end);
    void compare();

    Sequencer sequencer_;
    std::uint64_t prefix_slot_bytes_;
    std::uint64_t data_length_bytes_;
    std::atomic<bool> abandoned_{false};
    std::atomic<bool> verified_{false};
    // Touched only by in-order work (one thread at a time).
    std::vector<StoredDigest> stored_;
    Crc32 crc_;
    Sha256 sha_;
};

} // namespace ringload
