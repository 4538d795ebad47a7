// engine/src/stages/device_destination.cpp
#include "ringload/engine/stages/device_destination.hpp"

namespace ringload {

DeviceDestination::~DeviceDestination() {
    if (scratch_ != nullptr && !converted_.load()) {
        link_.free_scratch(scratch_); // a load that failed half-way: the conversion never ran
    }
}

Result<std::byte*> DeviceDestination::upload_target() {
    if (!record_.convert_to) {
        return destination_;
    }
    std::lock_guard lock(scratch_mutex_);
    if (scratch_ == nullptr) {
        RL_TRY(scratch, link_.allocate_scratch(record_.data_length_bytes));
        scratch_ = scratch;
    }
    return scratch_;
}

Result<void> DeviceDestination::process(Piece piece) {
    // The piece's holder (slot, staging) stays alive until the copy has completed.
    RL_TRY(target, upload_target());
    RL_TRY_VOID(link_.upload(target + piece.begin, piece.bytes, piece.length(), piece.keep_alive));
    // Counted after the copy is queued: the thread that completes the count converts, after
    // every copy of this record (convert() orders itself after all queued uploads).
    const std::uint64_t length = piece.length();
    if (record_.convert_to && uploaded_.fetch_add(length) + length == record_.data_length_bytes) {
        converted_.store(true);
        RL_TRY_VOID(link_.convert(destination_, *record_.convert_to, scratch_, record_.dtype,
                                  record_.data_length_bytes / itemsize(record_.dtype)));
    }
    return pass(std::move(piece));
}

Result<void> DeviceDestination::finish() {
    if (record_.zero_fill_bytes > 0) {
        return link_.fill_zero(destination_, record_.zero_fill_bytes);
    }
    return {};
}

} // namespace ringload
