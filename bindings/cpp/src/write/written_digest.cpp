// bindings/cpp/src/write/written_digest.cpp
#include "write/written_digest.hpp"

namespace ringload {

void WrittenDigest::window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    inner_.window_filled(offset_bytes, bytes);
    std::unique_lock lock(mutex_);
    if (offset_bytes != next_bytes_ || hashing_) {
        parked_.emplace(offset_bytes, std::vector<std::byte>(bytes.begin(), bytes.end()));
        return;
    }
    // This thread hashes its window, then every parked one that follows, one at a time.
    hashing_ = true;
    std::vector<std::byte> taken;
    std::span<const std::byte> next = bytes;
    for (;;) {
        lock.unlock();
        sha_.update(next);
        lock.lock();
        next_bytes_ += next.size();
        const auto parked = parked_.find(next_bytes_);
        if (parked == parked_.end()) {
            break;
        }
        taken = std::move(parked->second);
        parked_.erase(parked);
        next = taken;
    }
    hashing_ = false;
}

std::optional<Sha256Digest> WrittenDigest::digest(std::uint64_t length_bytes) {
    std::lock_guard lock(mutex_);
    if (!valid_ || next_bytes_ != length_bytes || !parked_.empty()) {
        return std::nullopt;
    }
    return sha_.finish();
}

} // namespace ringload
