// tests/support/host_device_link.hpp
//
// A DeviceLink whose "device memory" is host memory, for testing the device path of the
// stage graphs on machines without a GPU. It behaves like the CUDA one where the graphs could
// go wrong: copies run later, on two "streams" (threads) that finish out of order, each after
// a short delay, and only then drop what kept their source alive — so a slot released too
// early, a conversion run before its bytes arrived, or a hash taken from released memory
// shows up as wrong bytes. The real link is tested on a GPU (tests/gpu).
#pragma once

#include "ringload/engine/device_link.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/scratch_account.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ringload::testing {

class HostDeviceLink final : public DeviceLink {
public:
    HostDeviceLink() {
        for (auto& stream : streams_) {
            stream.thread = std::thread([this, &stream] { drain(stream); });
        }
    }
    ~HostDeviceLink() override {
        (void)synchronize();
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        changed_.notify_all();
        for (auto& stream : streams_) {
            stream.thread.join();
        }
    }

    int ordinal() const noexcept override { return 0; }
    std::string name() const override { return "host-as-device"; }

    Result<void> order_after_default_stream() override { return {}; }
    Result<void> upload(std::byte* device, const std::byte* host, std::size_t length,
                        std::shared_ptr<const void> keep_alive) override {
        uploads_.fetch_add(1);
        enqueue(next_++ % 2, [device, host, length, keep = std::move(keep_alive)]() mutable {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            std::memcpy(device, host, length);
            keep.reset();
        });
        return {};
    }
    Result<void> fill_zero(std::byte* device, std::size_t length) override {
        enqueue(0, [device, length] { std::memset(device, 0, length); });
        return {};
    }
    Result<std::byte*> allocate_scratch(std::size_t length) override {
        auto* scratch = new std::byte[std::max<std::size_t>(length, 1)];
        scratch_.allocated(scratch, length);
        return scratch;
    }
    void free_scratch(std::byte* scratch) noexcept override {
        scratch_.freed(scratch);
        delete[] scratch;
    }
    std::uint64_t take_scratch_peak_bytes() noexcept override { return scratch_.take_peak(); }
    std::uint64_t scratch_held_bytes() const { return scratch_.held_bytes(); }
    Result<void> convert(std::byte* to, DType to_type, std::byte* from, DType from_type, std::uint64_t count) override {
        // After every copy queued so far, on both streams, as the CUDA link orders it.
        std::vector<std::uint64_t> wait_for;
        {
            std::lock_guard lock(mutex_);
            for (auto& stream : streams_) {
                wait_for.push_back(stream.queued);
            }
        }
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return streams_[0].done >= wait_for[0] && streams_[1].done >= wait_for[1]; });
        }
        convert_elements(to, to_type, from, from_type, count);
        scratch_.freed(from);
        delete[] from;
        conversions_.fetch_add(1);
        return {};
    }
    Result<void> when_landed(std::function<void(bool ok)> landed) override {
        // After every job queued so far, on both streams: a job on each that waits for the other.
        auto both = std::make_shared<std::atomic<int>>(2);
        auto call = [both, landed = std::move(landed)] {
            if (both->fetch_sub(1) == 1) {
                landed(true);
            }
        };
        enqueue(0, call);
        enqueue(1, call);
        return {};
    }
    Result<std::shared_ptr<std::byte>> staging(std::size_t length) override {
        return std::shared_ptr<std::byte>(new std::byte[length], std::default_delete<std::byte[]>());
    }
    Result<void> download(std::byte* host, const std::byte* device, std::size_t length) override {
        std::memcpy(host, device, length);
        return {};
    }
    Result<void> synchronize() override {
        std::unique_lock lock(mutex_);
        changed_.wait(lock,
                      [&] { return streams_[0].done == streams_[0].queued && streams_[1].done == streams_[1].queued; });
        return {};
    }

    std::uint64_t uploads() const { return uploads_.load(); }
    std::uint64_t conversions() const { return conversions_.load(); }

private:
    struct Stream {
        std::deque<std::function<void()>> jobs;
        std::uint64_t queued = 0;
        std::uint64_t done = 0;
        std::thread thread;
    };

    void enqueue(std::size_t index, std::function<void()> job) {
        {
            std::lock_guard lock(mutex_);
            streams_[index].jobs.push_back(std::move(job));
            ++streams_[index].queued;
        }
        changed_.notify_all();
    }

    void drain(Stream& stream) {
        std::unique_lock lock(mutex_);
        for (;;) {
            changed_.wait(lock, [&] { return stopping_ || !stream.jobs.empty(); });
            if (stream.jobs.empty()) {
                return;
            }
            auto job = std::move(stream.jobs.front());
            stream.jobs.pop_front();
            lock.unlock();
            job();
            job = nullptr; // drops what the job kept alive before the copy counts as done
            lock.lock();
            ++stream.done;
            changed_.notify_all();
        }
    }

    ScratchAccount scratch_;
    std::mutex mutex_;
    std::condition_variable changed_;
    Stream streams_[2];
    bool stopping_ = false;
    std::atomic<std::uint64_t> next_{0};
    std::atomic<std::uint64_t> uploads_{0};
    std::atomic<std::uint64_t> conversions_{0};
};

} // namespace ringload::testing
