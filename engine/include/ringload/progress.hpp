// engine/include/ringload/progress.hpp
//
// Progress reports and cancellation for long operations. The callback runs on the engine's
// scheduler thread, at most every few milliseconds: keep it short. Cancel from any thread;
// the operation stops issuing reads, waits for those in flight, and fails with errc::cancelled.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace ringload {

struct Progress {
    std::uint64_t bytes_done = 0;
    std::uint64_t bytes_total = 0;
    std::uint64_t tensors_done = 0;
    std::uint64_t tensors_total = 0;
    double seconds = 0;
};

using ProgressCallback = std::function<void(const Progress&)>;

class CancelToken {
public:
    void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
    bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

private:
    std::atomic<bool> cancelled_{false};
};

} // namespace ringload
