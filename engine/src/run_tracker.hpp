// engine/src/run_tracker.hpp
//
// What the read and the write executor share about one run: its first error (from any
// thread), the work on the pool it must wait for, and progress reports at most every 100 ms.
#pragma once

#include "ringload/engine/executor.hpp"
#include "ringload/error.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace ringload {

class RunTracker {
public:
    using Clock = std::chrono::steady_clock;

    explicit RunTracker(asio::any_io_executor loop) : wakeup_(loop) {
        wakeup_.expires_at(asio::steady_timer::time_point::max());
    }

    // Any thread. The first failure also calls the stop listener (on this thread).
    void record_failure(Error error) {
        std::function<void()> listener;
        {
            std::lock_guard lock(error_mutex_);
            if (!first_error_) {
                first_error_ = std::move(error);
                listener = stop_listener_;
            }
            failed_.store(true, std::memory_order_relaxed);
        }
        if (listener) {
            listener();
        }
    }
    // Called once, on the failing thread, when the run fails (a watcher wakes instead of polling).
    void on_stop(std::function<void()> listener) {
        std::lock_guard lock(error_mutex_);
        stop_listener_ = std::move(listener);
    }
    bool has_failed() const { return failed_.load(std::memory_order_relaxed); }
    // Loop thread, before issuing more work: true after a failure or once the caller cancelled
    // (recorded as errc::cancelled, naming `where`).
    bool should_stop(const RunControls& controls, const std::string& where) {
        if (!has_failed() && controls.cancel != nullptr && controls.cancel->cancelled()) {
            record_failure(fail(errc::cancelled, where + ": cancelled by the caller"));
        }
        return has_failed();
    }
    // After the run (every worker done).
    const std::optional<Error>& first_error() const { return first_error_; }

    // Loop thread: pool work the run waits for.
    void work_started() { ++workers_busy_; }
    void work_ended() {
        --workers_busy_;
        wakeup_.cancel();
    }
    Task<void> wait_for_work() {
        while (workers_busy_ > 0) {
            auto waited = co_await wakeup_.async_wait(use_task);
            (void)waited;
        }
    }

    // Loop thread: the reads the run will issue; each one that came in whole says so, and the
    // last calls controls.reads_done (unless the run failed or was cancelled).
    void expect_reads(std::size_t count) { reads_left_ = count; }
    void read_came_in(const RunControls& controls) {
        if (--reads_left_ == 0 && !has_failed() && controls.reads_done) {
            controls.reads_done();
        }
    }

    // Loop thread: counts bytes done and reports them (throttled unless forced).
    void add_done(std::uint64_t bytes) { bytes_done_ += bytes; }
    std::uint64_t bytes_done() const { return bytes_done_; }
    void add_in_place(std::uint64_t bytes) { bytes_in_place_ += bytes; }
    std::uint64_t bytes_in_place() const { return bytes_in_place_; }
    double seconds() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
    void report_progress(const RunControls& controls, std::uint64_t total, bool force) {
        if (!controls.progress) {
            return;
        }
        auto now = Clock::now();
        if (!force && now - last_progress_ < std::chrono::milliseconds(100)) {
            return;
        }
        last_progress_ = now;
        Progress progress;
        progress.bytes_done = bytes_done_;
        progress.bytes_total = total;
        progress.tensors_total = controls.progress_tensors_total;
        if (controls.tensors_done != nullptr) {
            progress.tensors_done = controls.tensors_done->load(std::memory_order_relaxed);
        }
        progress.seconds = std::chrono::duration<double>(now - started_).count();
        controls.progress(progress);
    }

private:
    std::mutex error_mutex_;
    std::optional<Error> first_error_;    // guarded by error_mutex_
    std::function<void()> stop_listener_; // guarded by error_mutex_
    std::atomic<bool> failed_{false};

    asio::steady_timer wakeup_;
    std::size_t workers_busy_ = 0;
    std::size_t reads_left_ = 0;
    std::uint64_t bytes_done_ = 0;
    std::uint64_t bytes_in_place_ = 0;
    Clock::time_point started_ = Clock::now();
    Clock::time_point last_progress_ = Clock::now();
};

} // namespace ringload
