// engine/include/ringload/progress.hpp
//
// Progress reports and cancellation for long operations. The callback runs on the engine's
// scheduler thread, at most every few milliseconds: keep it short. Cancel from any thread;
// the operation stops issuing reads, abandons those in flight, and fails with errc::cancelled.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace ringload {

struct Progress {
    std::uint64_t bytes_done = 0;
    std::uint64_t bytes_total = 0;
    std::uint64_t tensors_done = 0;
    std::uint64_t tensors_total = 0;
    double seconds = 0;
};

using ProgressCallback = std::function<void(const Progress&)>;

// Cancellation from any thread. Besides the flag a loop may look at, whoever waits for something
// (a run's watcher, parked on a timer) subscribes and is called the moment cancel() is, instead
// of polling (seastar's abort_source is the model).
class CancelToken {
public:
    // What subscribe() returns: the callback is called at most once, and never after this goes.
    class Subscription {
    public:
        Subscription() = default;
        Subscription(Subscription&& other) noexcept : token_(other.token_), id_(other.id_) { other.token_ = nullptr; }
        Subscription& operator=(Subscription&&) = delete;
        Subscription(const Subscription&) = delete;
        ~Subscription() {
            if (token_ != nullptr) {
                token_->unsubscribe(id_);
            }
        }

    private:
        friend class CancelToken;
        Subscription(const CancelToken* token, std::uint64_t id) : token_(token), id_(id) {}
        const CancelToken* token_ = nullptr;
        std::uint64_t id_ = 0;
    };

    CancelToken() = default;
    CancelToken(const CancelToken&) = delete;
    CancelToken& operator=(const CancelToken&) = delete;

    // Sets the flag and calls every subscriber (on this thread, once).
    void cancel() {
        std::lock_guard lock(mutex_);
        if (cancelled_.exchange(true, std::memory_order_relaxed)) {
            return;
        }
        for (auto& [id, callback] : subscribers_) {
            callback();
        }
        subscribers_.clear();
    }
    bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

    // Calls `on_cancel` when cancel() is called (at once, here, if it already was). Keep it
    // short and thread-safe: it runs on the cancelling thread (post to a loop from it).
    [[nodiscard]] Subscription subscribe(std::function<void()> on_cancel) const {
        std::unique_lock lock(mutex_);
        if (cancelled()) {
            lock.unlock();
            on_cancel();
            return {};
        }
        const std::uint64_t id = ++last_id_;
        subscribers_.emplace(id, std::move(on_cancel));
        return {this, id};
    }

private:
    void unsubscribe(std::uint64_t id) const {
        std::lock_guard lock(mutex_);
        subscribers_.erase(id);
    }

    // Subscribing does not change what the token says: callers hold it as const.
    std::atomic<bool> cancelled_{false};
    mutable std::mutex mutex_;
    mutable std::map<std::uint64_t, std::function<void()>> subscribers_; // guarded by mutex_
    mutable std::uint64_t last_id_ = 0;                                  // guarded by mutex_
};

} // namespace ringload
