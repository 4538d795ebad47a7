// bindings/cpp/src/load/streamed_tensors.hpp
//
// The feed of a streamed conversion: a source's tensors as a writer takes them, whose bytes
// are loaded in batches through the source's ring just ahead of the writer, within a memory
// budget, and let go as soon as the writer is through with them.
//
// The tensors' spans point into one reservation of address space (every tensor on its own
// pages) that costs nothing until a batch is loaded into it; letting a tensor go hands its
// pages back to the kernel (MADV_DONTNEED). A background thread loads, in the order the
// writer reads, as far ahead as the budget allows; a tensor the writer is waiting for is
// loaded even past the budget (a single tensor larger than the budget has to be), so the
// write never waits on memory it is itself holding.
//
// Thread: tensors() from the caller; the WriteFeed calls from the write's loop thread.
#pragma once

#include "ringload/engine/write_feed.hpp"
#include "ringload/ringload.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace ringload {

struct StreamStats {
    std::uint64_t bytes_loaded = 0;    // tensor bytes produced by the source
    std::uint64_t bytes_read = 0;      // bytes read from it
    std::uint64_t peak_held_bytes = 0; // the most tensor bytes in memory at once
    std::size_t batches = 0;
    std::string how; // how the source read
};

class StreamedTensors final : public WriteFeed {
public:
    // `load` gives the source's read settings (verify, threads, ring); its filter, destination,
    // dtype, device and progress are the feed's own.
    static Result<std::unique_ptr<StreamedTensors>> create(Deserializer& source, const LoadOptions& load,
                                                           std::uint64_t budget_bytes);
    ~StreamedTensors() override;
    StreamedTensors(const StreamedTensors&) = delete;
    StreamedTensors& operator=(const StreamedTensors&) = delete;

    // Every tensor of the source, in its index order, for the writer.
    std::span<const TensorToWrite> tensors() const noexcept { return tensors_; }
    // After the write (the loader has stopped).
    StreamStats stats() const;

    Result<void> start(std::vector<FileExtent> extents) override;
    Result<bool> ready_before(std::uint64_t offset_bytes) override;
    void done_before(std::uint64_t offset_bytes) override;

private:
    StreamedTensors(Deserializer& source, const LoadOptions& load, std::uint64_t budget_bytes);
    void load_in_order();
    Result<void> load_batch(std::size_t from, std::size_t to);
    std::byte* place_of(std::size_t tensor) const;
    void stop_loader();

    Deserializer& source_;
    LoadOptions load_;
    std::uint64_t budget_bytes_;
    std::byte* reservation_ = nullptr;
    std::size_t reservation_bytes_ = 0;
    std::vector<std::size_t> places_; // each tensor's offset in the reservation (page-aligned)
    std::vector<TensorToWrite> tensors_;

    // Tensors with bytes to load, in the order the writer reads them, and their extents.
    std::vector<std::size_t> order_;
    std::vector<FileExtent> extents_; // by order position
    std::size_t released_ = 0;        // order positions before it are let go (loop thread)

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t loaded_ = 0;   // order positions before it are in place
    std::size_t demanded_ = 0; // ... and before this one the writer waits for
    std::uint64_t held_bytes_ = 0;
    std::optional<Error> error_;
    bool stopping_ = false;
    StreamStats stats_;
    CancelToken cancel_;
    std::thread loader_;
};

} // namespace ringload
