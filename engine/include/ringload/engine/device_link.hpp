// engine/include/ringload/engine/device_link.hpp
//
// What a load or a write needs from one GPU, without CUDA in the engine's headers: gpu/
// implements it with the CUDA runtime (a pool of streams on one device), and a build without
// CUDA never creates one.
//
//     RL_TRY(link, gpu::open_device_link(0));
//     link->upload(tensor_on_device + offset, slot_bytes, length, chunk);  // chunk held until copied
//     ...
//     RL_TRY_VOID(link->synchronize());                                    // all copies landed
//
// Thread: upload, fill_zero, convert and download may be called from any thread at once (the
// worker pool); synchronize from one thread after the last of them returned.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ringload {

class DeviceLink {
public:
    virtual ~DeviceLink() = default;

    virtual int ordinal() const noexcept = 0;
    virtual std::string name() const = 0; // "cuda:0"

    // Called on the caller's thread before a load's first copy: its copies and kernels wait for
    // work already queued on the device's default stream (kernels still using memory that a
    // caller gives as destinations).
    virtual Result<void> order_after_default_stream() = 0;
    // Queues a host-to-device copy from page-locked `host` and returns at once. `keep_alive`
    // (the chunk whose slot holds the bytes) is dropped, on some thread, once the copy has
    // completed: that is when the slot may be reused.
    virtual Result<void> upload(std::byte* device, const std::byte* host, std::size_t length,
                                std::shared_ptr<const void> keep_alive) = 0;
    // Queues zeros into device memory (meta tensors).
    virtual Result<void> fill_zero(std::byte* device, std::size_t length) = 0;
    // Device memory for raw bytes that are converted later; freed by convert().
    virtual Result<std::byte*> allocate_scratch(std::size_t length) = 0;
    // Frees scratch that never reached convert() (a load that failed half-way), once the
    // uploads into it have finished.
    virtual void free_scratch(std::byte* scratch) noexcept = 0;
    // The most scratch held at once since the last call (see ScratchAccount): a load takes it
    // before its first copy and after its last, for the device memory it used.
    virtual std::uint64_t take_scratch_peak_bytes() noexcept = 0;
    // Once every upload queued so far has landed, converts `count` elements at `from` (scratch
    // from allocate_scratch, freed afterwards, also when this fails) into `to`. float64/32/16
    // and bfloat16 only.
    virtual Result<void> convert(std::byte* to, DType to_type, std::byte* from, DType from_type,
                                 std::uint64_t count) = 0;
    // Page-locked host memory for staging (decryption of pieces that straddle slots); it goes
    // back to the link's pool when the last pointer dies.
    virtual Result<std::shared_ptr<std::byte>> staging(std::size_t length) = 0;
    // Copies device bytes to host memory and waits for them (writers, checks).
    virtual Result<void> download(std::byte* host, const std::byte* device, std::size_t length) = 0;
    // Calls `landed` once every copy, fill and conversion queued so far (on any thread) has
    // completed on the device: true, or false when one of them failed (synchronize() says how).
    // It runs on the link's own completion thread and must be short; synchronize() waits for it.
    // A stage graph hands a record's device tensor over from here (StageGraph::on_record_done).
    virtual Result<void> when_landed(std::function<void(bool ok)> landed) = 0;
    // Waits for everything queued and reports the first failure of an asynchronous copy since
    // the last call (a link serves many loads).
    virtual Result<void> synchronize() = 0;
};

} // namespace ringload
