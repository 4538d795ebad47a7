// engine/src/stages/hash.cpp
#include "ringload/engine/stages/hash.hpp"

#include <cstring>
#include <string>

namespace ringload {

void Hash::arm(std::vector<std::byte> prefix, std::vector<StoredDigest> stored) {
    sequencer_.submit(0, prefix_slot_bytes_, [this, prefix = std::move(prefix), stored = std::move(stored)]() mutable {
        stored_ = std::move(stored);
        update(prefix, prefix_slot_bytes_);
    });
}

Result<void> Hash::process(Piece piece) {
    const std::uint64_t begin = prefix_slot_bytes_ + piece.begin;
    const std::uint64_t end = prefix_slot_bytes_ + piece.end;
    // The piece goes on once hashed (a record is complete when its bytes left its last stage:
    // StageGraph::on_record_done), and the last one only when the sums matched, so that a
    // tensor whose hash fails is never handed over.
    sequencer_.submit(begin, end - begin, [this, begin, end, piece = std::move(piece)]() mutable {
        update({piece.bytes, end - begin}, end);
        if (abandoned_.load(std::memory_order_relaxed) ||
            (end == prefix_slot_bytes_ + data_length_bytes_ && !verified_.load(std::memory_order_acquire))) {
            return;
        }
        auto passed = pass(std::move(piece));
        if (!passed) {
            report(passed.error());
        }
    });
    return {};
}

void Hash::update(std::span<const std::byte> bytes, std::uint64_t end) {
    if (abandoned_.load(std::memory_order_relaxed)) {
        return; // the run failed: the failure is already recorded
    }
    crc_.update(bytes);
    sha_.update(bytes);
    if (end == prefix_slot_bytes_ + data_length_bytes_) {
        compare();
    }
}

void Hash::compare() {
    if (stored_.empty()) {
        report(fail(errc::hash_mismatch, "no stored hashes to verify"));
        return;
    }
    const std::uint32_t crc = crc_.value();
    const Sha256Digest sha = sha_.finish();
    for (const auto& stored : stored_) {
        if (stored.kind == StoredDigest::Kind::crc32) {
            std::uint32_t expected = 0;
            std::memcpy(&expected, stored.value.data(), 4);
            if (expected != crc) {
                report(fail(errc::hash_mismatch, "CRC32 mismatch: stored " + std::to_string(expected) + ", computed " +
                                                     std::to_string(crc)));
                return;
            }
        } else if (stored.kind == StoredDigest::Kind::sha256) {
            if (std::memcmp(stored.value.data(), sha.data(), 32) != 0) {
                auto stored_hex = to_hex({reinterpret_cast<const std::uint8_t*>(stored.value.data()), 32});
                report(
                    fail(errc::hash_mismatch, "SHA-256 mismatch: stored " + stored_hex + ", computed " + to_hex(sha)));
                return;
            }
        } else {
            report(fail(errc::unsupported, "unknown stored hash type " + std::to_string(stored.type_code)));
            return;
        }
    }
    verified_.store(true, std::memory_order_release);
}

Result<void> Hash::finish() {
    if (!verified_.load(std::memory_order_acquire)) {
        return fail(errc::hash_mismatch, "its hashes were never checked");
    }
    return {};
}

void Hash::abandon() noexcept {
    abandoned_.store(true);
    sequencer_.abandon(); // drops parked pieces, and the slots they hold
}

} // namespace ringload
