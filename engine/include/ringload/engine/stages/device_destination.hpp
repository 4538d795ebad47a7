// engine/include/ringload/engine/stages/device_destination.hpp
//
// A record's destination in GPU memory, through a DeviceLink. Each piece is uploaded from
// where it lies (a slot, or page-locked staging), which stays alive until the copy completed;
// the stages after it read the piece there. A record whose dtype changes is uploaded into
// device scratch and converted into the destination by the thread that queues its last byte
// (the link orders the conversion after every queued upload). Meta tensors are zero-filled at
// finish; the graph synchronizes the link once every record finished.
//
//     stages.push_back(std::make_unique<DeviceDestination>(link, tensor_on_device,
//                                                          DeviceRecord{length, DType::float32, DType::float16}));
//
// Thread: process() from any worker, for disjoint pieces.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/stage.hpp"

#include <atomic>
#include <mutex>
#include <optional>

namespace ringload {

struct DeviceRecord {
    std::uint64_t data_length_bytes = 0;
    DType dtype = DType::uint8;      // as stored
    std::optional<DType> convert_to; // converted on the device once all bytes are there
    std::uint64_t zero_fill_bytes = 0;
};

class DeviceDestination final : public Destination {
public:
    // `link` must outlive the stage.
    DeviceDestination(DeviceLink& link, std::byte* destination, DeviceRecord record)
        : link_(link), destination_(destination), record_(record) {}
    ~DeviceDestination() override;

    std::string_view name() const override { return "device"; }
    Result<void> process(Piece piece) override;
    Result<void> finish() override;
    std::byte* host_place(std::uint64_t offset_bytes) const noexcept override {
        (void)offset_bytes;
        return nullptr;
    }
    Result<std::shared_ptr<std::byte>> staging(std::size_t length_bytes) override {
        return link_.staging(length_bytes);
    }

private:
    Result<std::byte*> upload_target();

    DeviceLink& link_;
    std::byte* destination_;
    DeviceRecord record_;
    std::mutex scratch_mutex_;
    std::byte* scratch_ = nullptr; // guarded by scratch_mutex_ until the conversion
    std::atomic<std::uint64_t> uploaded_{0};
    std::atomic<bool> converted_{false};
};

} // namespace ringload
