// io/src/off_loop.hpp
//
// Work a source does on a thread of its own while its read waits, so that the loop thread goes
// on serving the other reads (the cache's CRC32 checks and writes: cached_source.cpp).
//
//     co_await when_done(loop, [&](std::function<void()> done) { filler.write(..., std::move(done)); });
//
// `start` hands `done` to the other thread, which calls it (once) when the work is over; the
// coroutine resumes on the loop after that.
// Thread: the coroutine on the loop thread; `done` from any.
#pragma once

#include "ringload/engine/task.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ringload {

template <class Start>
Task<void> when_done(asio::any_io_executor loop, Start start) {
    asio::steady_timer over(loop);
    over.expires_at(asio::steady_timer::time_point::max());
    // The cancel is posted to the loop, so it runs after this coroutine is suspended below.
    start(std::function<void()>([loop, &over] { asio::post(loop, [&over] { over.cancel(); }); }));
    auto waited = co_await over.async_wait(use_task);
    (void)waited;
}

// One thread running the jobs posted to it, in order; the destructor runs those left, then joins.
class HelperThread {
public:
    HelperThread() : thread_([this] { run(); }) {}
    ~HelperThread() {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }
    HelperThread(const HelperThread&) = delete;
    HelperThread& operator=(const HelperThread&) = delete;

    void post(std::function<void()> job) {
        {
            std::lock_guard lock(mutex_);
            jobs_.push_back(std::move(job));
        }
        wake_.notify_one();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
            if (jobs_.empty()) {
                return;
            }
            std::function<void()> job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool closing_ = false;
    std::thread thread_;
};

} // namespace ringload
