// bindings/cpp/src/load/tensor_handover.hpp
//
// A load's end of the streamed hand-over (LoadOptions::on_tensor): the stage graph says when a
// record's bytes are final (StageGraph::on_record_done), the load finishes the tensors it
// holds (a dtype conversion, a torch view's C-order copy) and hands each one here, which
// counts it (Progress::tensors_done) and passes it to the caller, one call at a time, with the
// owner of the load's memory.
//
//     TensorHandover handover(options, "cpu", arena);
//     hooks.record_done = [&](std::size_t id) { ...; handover.hand_over(position, [&] { return tensor; }); };
//
// Thread: hand_over from any thread (workers, a device link's completion thread, the loop).
#pragma once

#include "ringload/ringload.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace ringload {

class TensorHandover {
public:
    TensorHandover(const LoadOptions& options, std::string device, std::shared_ptr<const void> owner)
        : on_tensor_(options.on_tensor), device_(std::move(device)), owner_(std::move(owner)) {}

    // The tensor at `position` of the model is final: `make()` builds it (only when the caller
    // takes tensors); `given` says its memory is the caller's (no owner goes with it).
    template <class Make>
    void hand_over(std::size_t position, bool given, Make&& make) {
        if (on_tensor_) {
            StreamedTensor streamed{std::forward<Make>(make)(), position, device_, given ? nullptr : owner_};
            std::lock_guard lock(mutex_);
            on_tensor_(streamed);
        }
        done_.fetch_add(1, std::memory_order_relaxed);
    }

    const std::atomic<std::uint64_t>* done() const noexcept { return &done_; }

private:
    std::function<void(const StreamedTensor&)> on_tensor_;
    std::string device_;
    std::shared_ptr<const void> owner_;
    std::mutex mutex_;
    std::atomic<std::uint64_t> done_{0};
};

} // namespace ringload
