// engine/include/ringload/engine/laned_sha256.hpp
//
// A streaming SHA-256 whose updates of several independent messages can run together on one
// core (hash_together): with SHA-NI the messages' rounds interleave, 1.45x one message's rate
// for two, 1.7x for four (engine/src/sha256_ni.hpp). Without SHA-NI it is OpenSSL's SHA-256,
// one message after another. The digests are SHA-256's either way.
//
//     LanedSha256 a, b;
//     LanedSha256::hash_together({{&a, bytes_a}, {&b, bytes_b}});   // any lengths
//     Sha256Digest digest = a.finish();                             // then a is as new
//
// Thread: one instance is used by one thread at a time.
#pragma once

#include "ringload/engine/hashes.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ringload {

class LanedSha256 {
public:
    struct Update {
        LanedSha256* hash = nullptr;
        std::span<const std::byte> bytes;
    };

    LanedSha256();

    void update(std::span<const std::byte> bytes) noexcept;
    // Each update's bytes go to its own hash, as update() would put them; the hashes differ.
    static void hash_together(std::span<const Update> updates) noexcept;
    // The digest of every byte so far; the hash starts again empty.
    Sha256Digest finish() noexcept;

    // Whether updates run together (the CPU has SHA-NI) or one after another.
    static bool interleaves() noexcept;

private:
    void reset() noexcept;
    std::span<const std::byte> top_up_buffer(std::span<const std::byte> bytes) noexcept;
    void keep_tail(std::span<const std::byte> bytes) noexcept;

    std::array<std::uint32_t, 8> state_{};
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_bytes_ = 0;
    std::uint64_t total_bytes_ = 0;
    Sha256 fallback_; // without SHA-NI
};

} // namespace ringload
