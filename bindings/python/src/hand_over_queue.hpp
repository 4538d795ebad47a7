// bindings/python/src/hand_over_queue.hpp
//
// The hand-over between a load's threads and Python that TensorStream (one file,
// stream_binding.cpp) and ModelStream (a model's files, model_stream_binding.cpp) share: the
// load's threads push each tensor as it lands and finish() once with the load's failure, if
// any; Python's next() takes them in the order they came, waiting with the GIL released and
// answering Ctrl-C, and raises the failure at the end unless the stream is being closed (a
// load cancelled by close() ends in a failure nobody asked to see). With a bound, push()
// waits while the items not yet taken hold that many bytes: a load that runs ahead of a slow
// consumer (files read side by side, each holding its memory until its tensors are dropped)
// then waits for it instead of holding the whole model.
//
//  load threads:  push(a) ........ push(b) ...... finish()
//  Python:        next() -> a      next() -> b    next() -> nullopt
#pragma once

#include "binding.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace ringload::python {

template <class Item>
class HandOverQueue {
public:
    // held_limit_bytes: the most bytes of items waiting to be taken before push() waits (0: no
    // bound). One item always goes in, however large.
    explicit HandOverQueue(std::uint64_t held_limit_bytes = 0) : limit_(held_limit_bytes) {}

    // From the load's threads (never touching Python): `bytes`, what the item holds. Waits for
    // room under the bound; once the stream is stopping, the item is dropped instead.
    void push(Item item, std::uint64_t bytes = 0) {
        {
            std::unique_lock lock(mutex_);
            if (limit_ != 0) {
                room_.wait(lock, [&] { return closing_ || queued_bytes_ == 0 || queued_bytes_ + bytes <= limit_; });
            }
            if (closing_) {
                return;
            }
            queue_.push_back({std::move(item), bytes});
            queued_bytes_ += bytes;
        }
        changed_.notify_all();
    }

    // The load is over; `failure` its error, if it failed.
    void finish(std::optional<Error> failure) {
        {
            std::lock_guard lock(mutex_);
            failure_ = std::move(failure);
            finished_ = true;
        }
        changed_.notify_all();
    }

    // From Python (the GIL held): the next item, nullopt once the load finished and every item
    // was taken; throws the load's failure (EngineFailure), or Python's error on Ctrl-C.
    std::optional<Item> next() {
        std::optional<Item> item;
        std::optional<Error> failure;
        for (;;) {
            bool finished = false;
            {
                nb::gil_scoped_release released;
                std::unique_lock lock(mutex_);
                if (changed_.wait_for(lock, std::chrono::milliseconds(100),
                                      [this] { return !queue_.empty() || finished_; })) {
                    if (!queue_.empty()) {
                        item.emplace(std::move(queue_.front().item));
                        queued_bytes_ -= queue_.front().bytes;
                        queue_.pop_front();
                        room_.notify_all();
                    } else {
                        finished = true;
                        if (!closing_) {
                            failure = failure_;
                        }
                    }
                }
            }
            if (item || finished) {
                break;
            }
            if (PyErr_CheckSignals() != 0) { // Ctrl-C while waiting
                throw nb::python_error();
            }
        }
        if (failure) {
            throw EngineFailure(*failure);
        }
        return item;
    }

    // Stops the load: its failure is then not the caller's to see; `cancel` stops it, `thread`
    // (the load's) is joined with the GIL released (it never takes it), and the items not
    // taken are dropped (the owners of their memory).
    void stop(CancelToken& cancel, std::thread& thread) {
        nb::gil_scoped_release released;
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        room_.notify_all(); // a push waiting for room drops its item and returns
        cancel.cancel();
        if (thread.joinable()) {
            thread.join();
        }
        std::lock_guard lock(mutex_);
        queue_.clear();
        queued_bytes_ = 0;
    }

private:
    struct Queued {
        Item item;
        std::uint64_t bytes = 0;
    };

    const std::uint64_t limit_;
    std::mutex mutex_;
    std::condition_variable changed_; // an item or the end came (next() waits)
    std::condition_variable room_;    // an item was taken, or the stream stops (push() waits)
    std::deque<Queued> queue_;        // guarded by mutex_
    std::uint64_t queued_bytes_ = 0;  // guarded by mutex_
    bool finished_ = false;           // guarded by mutex_
    bool closing_ = false;            // guarded by mutex_
    std::optional<Error> failure_;    // guarded by mutex_
};

} // namespace ringload::python
