// engine/include/ringload/engine/scratch_account.hpp
//
// The device scratch a DeviceLink holds (raw bytes of tensors that are converted on the
// device): bytes held now, and the most held since the peak was last taken. With the tensors'
// own block this is what a load cost the device beyond the CUDA context, the figure peers
// report as torch.cuda.max_memory_allocated (`ringload load --json`: device_peak_bytes).
//
//     account.allocated(scratch, length);      // after the allocation succeeded
//     account.freed(scratch);                  // before its free is queued: once it is, the
//                                              // same address may come back from an allocation
//     std::uint64_t peak = account.take_peak();
//
// Thread: any.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace ringload {

class ScratchAccount {
public:
    void allocated(const void* scratch, std::size_t length_bytes) {
        std::lock_guard lock(mutex_);
        lengths_[scratch] = length_bytes;
        held_bytes_ += length_bytes;
        peak_bytes_ = std::max(peak_bytes_, held_bytes_);
    }

    void freed(const void* scratch) noexcept {
        std::lock_guard lock(mutex_);
        auto it = lengths_.find(scratch);
        if (it != lengths_.end()) {
            held_bytes_ -= it->second;
            lengths_.erase(it);
        }
    }

    // The most held since the last call; the next period starts from what is held now.
    std::uint64_t take_peak() noexcept {
        std::lock_guard lock(mutex_);
        const std::uint64_t peak = peak_bytes_;
        peak_bytes_ = held_bytes_;
        return peak;
    }

    std::uint64_t held_bytes() const noexcept {
        std::lock_guard lock(mutex_);
        return held_bytes_;
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<const void*, std::size_t> lengths_;
    std::uint64_t held_bytes_ = 0;
    std::uint64_t peak_bytes_ = 0;
};

} // namespace ringload
