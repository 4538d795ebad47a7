// engine/src/stages/decrypt.cpp
#include "ringload/engine/stages/decrypt.hpp"

#include "ringload/engine/stream_copy.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace ringload {

Result<void> Decrypt::arm(std::vector<SealedChunk> chunks, const SecretKey& key) {
    std::vector<Piece> parked;
    {
        std::lock_guard lock(mutex_);
        chunks_ = std::move(chunks);
        key_ = &key;
        missing_.resize(chunks_.size());
        for (std::size_t i = 0; i < chunks_.size(); ++i) {
            missing_[i] = chunks_[i].length_bytes;
        }
        armed_ = true;
        parked.swap(parked_);
    }
    for (const Piece& piece : parked) {
        RL_TRY_VOID(take(piece));
    }
    return {};
}

Result<void> Decrypt::process(Piece piece) {
    if (!armed()) {
        // Data before its header: on the host it waits in the tensor, where its boxes open in
        // place once armed, so that its slot goes back now (a worker slow to reach the header
        // would otherwise let the ring fill with parked chunks and stall the reads). On the way
        // to a device it waits in its slot.
        if (std::byte* place = destination_.host_place(piece.begin); place != nullptr && !piece.at_destination) {
            copy_to_destination(place, piece.bytes, piece.length());
            piece.bytes = place;
            piece.at_destination = true;
            piece.keep_alive.reset();
        }
        std::lock_guard lock(mutex_);
        if (abandoned_) {
            return {}; // the run failed: hold nothing more
        }
        if (!armed_) {
            parked_.push_back(std::move(piece)); // replayed by arm()
            return {};
        }
    }
    return take(piece); // once armed, the boxes never change
}

bool Decrypt::armed() {
    std::lock_guard lock(mutex_);
    return armed_;
}

Result<void> Decrypt::take(const Piece& piece) {
    auto it = std::partition_point(chunks_.begin(), chunks_.end(),
                                   [&](const SealedChunk& chunk) { return chunk.end_bytes() <= piece.begin; });
    for (; it != chunks_.end() && it->offset_bytes < piece.end; ++it) {
        const auto index = static_cast<std::size_t>(it - chunks_.begin());
        const std::uint64_t from = std::max(piece.begin, it->offset_bytes);
        const std::uint64_t to = std::min(piece.end, it->end_bytes());
        std::byte* ciphertext = piece.bytes + (from - piece.begin);
        if (from == it->offset_bytes && to == it->end_bytes()) {
            RL_TRY_VOID(open_whole(index, ciphertext, piece.keep_alive));
        } else {
            RL_TRY_VOID(gather(index, from, to, ciphertext));
        }
    }
    return {};
}

Result<void> Decrypt::open_whole(std::size_t index, std::byte* ciphertext,
                                 const std::shared_ptr<const void>& keep_alive) {
    const SealedChunk& chunk = chunks_[index];
    Piece plain{chunk.offset_bytes, chunk.end_bytes(), ciphertext, keep_alive, false};
    if (std::byte* place = destination_.host_place(chunk.offset_bytes)) {
        plain = {chunk.offset_bytes, chunk.end_bytes(), place, nullptr, true};
    }
    RL_TRY_VOID(open(index, {plain.bytes, chunk.length_bytes}, {ciphertext, chunk.length_bytes}));
    return pass(std::move(plain));
}

Result<Decrypt::Gathering> Decrypt::gathering_place(std::size_t index) {
    std::lock_guard lock(mutex_);
    Gathering& place = gathering_[index];
    if (place.bytes == nullptr) {
        if (std::byte* host = destination_.host_place(chunks_[index].offset_bytes)) {
            place.bytes = host;
        } else {
            RL_TRY(staging, destination_.staging(chunks_[index].length_bytes));
            place.bytes = staging.get();
            place.keep_alive = std::move(staging);
        }
    }
    return place;
}

Result<void> Decrypt::gather(std::size_t index, std::uint64_t from, std::uint64_t to, const std::byte* ciphertext) {
    const SealedChunk& chunk = chunks_[index];
    RL_TRY(place, gathering_place(index));
    std::byte* gather_at = place.bytes + (from - chunk.offset_bytes);
    if (gather_at != ciphertext && place.keep_alive == nullptr) { // not waiting there already (process)
        copy_to_destination(gather_at, ciphertext, to - from);
    } else if (gather_at != ciphertext) {
        std::memcpy(gather_at, ciphertext, to - from);
    }
    {
        std::lock_guard lock(mutex_);
        missing_[index] -= to - from;
        if (missing_[index] != 0) {
            return {};
        }
        gathering_.erase(index); // complete: this thread opens it
    }
    std::span<std::byte> bytes(place.bytes, chunk.length_bytes);
    RL_TRY_VOID(open(index, bytes, bytes));
    const bool at_destination = place.keep_alive == nullptr;
    return pass({chunk.offset_bytes, chunk.end_bytes(), place.bytes, std::move(place.keep_alive), at_destination});
}

Result<void> Decrypt::open(std::size_t index, std::span<std::byte> plaintext, std::span<const std::byte> ciphertext) {
    const SealedChunk& chunk = chunks_[index];
    if (!open_into(plaintext, ciphertext, chunk.mac, chunk.nonce, *key_)) {
        return fail(errc::decryption_failed,
                    "cipher chunk " + std::to_string(index + 1) + " of " + std::to_string(chunks_.size()) +
                        " (data bytes " + std::to_string(chunk.offset_bytes) + ".." +
                        std::to_string(chunk.end_bytes()) +
                        ") failed authentication: wrong key or passphrase, or the data or its MAC is corrupted");
    }
    opened_.fetch_add(1, std::memory_order_acq_rel);
    return {};
}

Result<void> Decrypt::finish() {
    std::lock_guard lock(mutex_);
    if (armed_ && opened_.load(std::memory_order_acquire) != chunks_.size()) {
        return fail(errc::truncated, "some of its cipher chunks were never complete");
    }
    return {};
}

void Decrypt::abandon() noexcept {
    std::vector<Piece> parked;
    std::map<std::size_t, Gathering> gathering;
    {
        std::lock_guard lock(mutex_);
        abandoned_ = true;
        parked.swap(parked_);
        gathering.swap(gathering_);
    }
    // What they held (slots, staging) goes here, outside the lock.
}

} // namespace ringload
