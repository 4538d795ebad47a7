// engine/include/ringload/engine/hashes.hpp
//
// Streaming CRC32 (zlib's, via ISA-L) and SHA-256 (OpenSSL, SHA-NI where the CPU has it).
// Both can be fed in pieces; update order matters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ringload {

class Crc32 {
public:
    void update(std::span<const std::byte> bytes) noexcept;
    std::uint32_t value() const noexcept { return crc_; }

private:
    std::uint32_t crc_ = 0;
};

using Sha256Digest = std::array<std::uint8_t, 32>;

class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(Sha256&&) noexcept;
    Sha256& operator=(Sha256&&) noexcept;

    void update(std::span<const std::byte> bytes) noexcept;
    Sha256Digest finish() noexcept;

private:
    struct State;
    std::unique_ptr<State> state_;
};

Sha256Digest sha256(std::span<const std::byte> bytes);
std::string to_hex(std::span<const std::uint8_t> bytes);

} // namespace ringload
