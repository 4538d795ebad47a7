// engine/src/laned_sha256.cpp
#include "ringload/engine/laned_sha256.hpp"

#include "sha256_ni.hpp"

#include <algorithm>
#include <cstring>

namespace ringload {
namespace {

constexpr std::array<std::uint32_t, 8> initial_state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
constexpr std::size_t block_bytes = 64;

const std::uint8_t* as_octets(const std::byte* bytes) {
    return reinterpret_cast<const std::uint8_t*>(bytes);
}

// One lane of a hash_together round: its hash, and its whole blocks not yet compressed.
struct Lane {
    std::uint32_t* state = nullptr;
    const std::uint8_t* data = nullptr;
    std::size_t blocks = 0;
};

// Compresses every lane's blocks, as many lanes at a time as have blocks left (up to four):
// the lanes with the fewest blocks set each step's length.
void compress_lanes(std::span<Lane> lanes) {
    for (;;) {
        std::uint32_t* states[sha_ni_lanes_max];
        const std::uint8_t* data[sha_ni_lanes_max];
        Lane* running[sha_ni_lanes_max];
        std::size_t count = 0;
        std::size_t step = SIZE_MAX;
        for (Lane& lane : lanes) {
            if (lane.blocks > 0 && count < sha_ni_lanes_max) {
                states[count] = lane.state;
                data[count] = lane.data;
                running[count++] = &lane;
                step = std::min(step, lane.blocks);
            }
        }
        if (count == 0) {
            return;
        }
        sha256_ni_blocks(states, data, count, step);
        for (std::size_t l = 0; l < count; ++l) {
            running[l]->data += step * block_bytes;
            running[l]->blocks -= step;
        }
    }
}

} // namespace

LanedSha256::LanedSha256() {
    reset();
}

bool LanedSha256::interleaves() noexcept {
    return sha_ni_available();
}

void LanedSha256::reset() noexcept {
    state_ = initial_state;
    buffered_bytes_ = 0;
    total_bytes_ = 0;
}

void LanedSha256::update(std::span<const std::byte> bytes) noexcept {
    const Update one{this, bytes};
    hash_together({&one, 1});
}

// Fills the partial block from `bytes` (compressing it once full); returns what is left.
std::span<const std::byte> LanedSha256::top_up_buffer(std::span<const std::byte> bytes) noexcept {
    total_bytes_ += bytes.size();
    if (buffered_bytes_ == 0) {
        return bytes;
    }
    const std::size_t take = std::min(bytes.size(), block_bytes - buffered_bytes_);
    std::memcpy(buffer_.data() + buffered_bytes_, bytes.data(), take);
    buffered_bytes_ += take;
    if (buffered_bytes_ == block_bytes) {
        std::uint32_t* state = state_.data();
        const std::uint8_t* data = buffer_.data();
        sha256_ni_blocks(&state, &data, 1, 1);
        buffered_bytes_ = 0;
    }
    return bytes.subspan(take);
}

void LanedSha256::keep_tail(std::span<const std::byte> bytes) noexcept {
    std::memcpy(buffer_.data() + buffered_bytes_, bytes.data(), bytes.size());
    buffered_bytes_ += bytes.size();
}

void LanedSha256::hash_together(std::span<const Update> updates) noexcept {
    if (!sha_ni_available()) {
        for (const Update& update : updates) {
            update.hash->fallback_.update(update.bytes);
        }
        return;
    }
    for (std::size_t first = 0; first < updates.size(); first += sha_ni_lanes_max) {
        const std::size_t count = std::min(sha_ni_lanes_max, updates.size() - first);
        Lane lanes[sha_ni_lanes_max];
        std::span<const std::byte> tails[sha_ni_lanes_max];
        for (std::size_t l = 0; l < count; ++l) {
            const Update& update = updates[first + l];
            const std::span<const std::byte> rest = update.hash->top_up_buffer(update.bytes);
            const std::size_t whole = rest.size() / block_bytes;
            lanes[l] = {update.hash->state_.data(), as_octets(rest.data()), whole};
            tails[l] = rest.subspan(whole * block_bytes);
        }
        compress_lanes({lanes, count});
        for (std::size_t l = 0; l < count; ++l) {
            updates[first + l].hash->keep_tail(tails[l]);
        }
    }
}

Sha256Digest LanedSha256::finish() noexcept {
    if (!sha_ni_available()) {
        const Sha256Digest digest = fallback_.finish();
        fallback_ = Sha256(); // OpenSSL's context takes no update after its final one
        return digest;
    }
    // FIPS 180-4's padding: 0x80, zeros to 56 bytes mod 64, the length in bits (big-endian).
    std::array<std::uint8_t, 2 * block_bytes> last{};
    std::memcpy(last.data(), buffer_.data(), buffered_bytes_);
    last[buffered_bytes_] = 0x80;
    const std::size_t blocks = buffered_bytes_ + 1 + 8 <= block_bytes ? 1 : 2;
    const std::uint64_t bits = total_bytes_ * 8;
    for (std::size_t i = 0; i < 8; ++i) {
        last[blocks * block_bytes - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
    }
    std::uint32_t* state = state_.data();
    const std::uint8_t* data = last.data();
    sha256_ni_blocks(&state, &data, 1, blocks);
    Sha256Digest digest{};
    for (std::size_t i = 0; i < 8; ++i) {
        for (std::size_t b = 0; b < 4; ++b) {
            digest[4 * i + b] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * b));
        }
    }
    reset();
    return digest;
}

} // namespace ringload
