// gpu/cuda_link.cpp
#include "gpu/cuda_link.hpp"

#include "gpu/convert_kernels.hpp"
#include "gpu/cuda_error.hpp"
#include "gpu/cuda_probe.hpp"
#include "gpu/device_guard.hpp"
#include "ringload/engine/scratch_account.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace ringload::gpu {
namespace {

std::optional<FloatKind> float_kind(DType dtype) {
    switch (dtype) {
        case DType::float64:
            return FloatKind::float64;
        case DType::float32:
            return FloatKind::float32;
        case DType::float16:
            return FloatKind::float16;
        case DType::bfloat16:
            return FloatKind::bfloat16;
        default:
            return std::nullopt;
    }
}

// Page-locked staging buffers, kept for reuse: cudaHostAlloc takes milliseconds.
class StagingPool : public std::enable_shared_from_this<StagingPool> {
public:
    ~StagingPool() {
        for (auto& [size, buffers] : free_) {
            for (std::byte* buffer : buffers) {
                (void)cudaFreeHost(buffer);
            }
        }
    }
    Result<std::shared_ptr<std::byte>> take(int ordinal, std::size_t length, const std::string& where) {
        std::byte* buffer = nullptr;
        {
            std::lock_guard lock(mutex_);
            auto& buffers = free_[length];
            if (!buffers.empty()) {
                buffer = buffers.back();
                buffers.pop_back();
            }
        }
        if (buffer == nullptr) {
            DeviceGuard guard(ordinal); // no stray context on device 0 from a fresh worker thread
            void* memory = nullptr;
            cudaError_t status = guard.status();
            if (status == cudaSuccess) {
                status = cudaHostAlloc(&memory, length, cudaHostAllocPortable);
            }
            if (status != cudaSuccess) {
                return cuda_error(where, "cudaHostAlloc", status);
            }
            buffer = static_cast<std::byte*>(memory);
        }
        // The deleter runs on the completion thread or a worker, never inside a CUDA callback.
        return std::shared_ptr<std::byte>(buffer, [pool = shared_from_this(), length](std::byte* pointer) {
            std::lock_guard lock(pool->mutex_);
            pool->free_[length].push_back(pointer);
        });
    }

private:
    std::mutex mutex_;
    std::map<std::size_t, std::vector<std::byte*>> free_;
};

class CudaDeviceLink final : public DeviceLink {
public:
    explicit CudaDeviceLink(int ordinal) : ordinal_(ordinal), where_("cuda:" + std::to_string(ordinal)) {}

    ~CudaDeviceLink() override {
        (void)synchronize();
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        if (completer_.joinable()) {
            completer_.join();
        }
        DeviceGuard guard(ordinal_);
        for (cudaEvent_t event : idle_events_) {
            (void)cudaEventDestroy(event);
        }
        for (cudaStream_t stream : streams_) {
            (void)cudaStreamDestroy(stream);
        }
        for (cudaStream_t stream : {convert_stream_, alloc_stream_}) {
            if (stream != nullptr) {
                (void)cudaStreamDestroy(stream);
            }
        }
    }

    Result<void> start() {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        // Non-blocking streams: no implicit ordering with the legacy default stream, which
        // other code in the process (torch) may use; order_after_default_stream() orders a
        // load after it once, at its start.
        for (int i = 0; i < upload_stream_count; ++i) {
            cudaStream_t stream = nullptr;
            RL_TRY_VOID(check("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
            streams_.push_back(stream);
        }
        RL_TRY_VOID(
            check("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&convert_stream_, cudaStreamNonBlocking)));
        RL_TRY_VOID(
            check("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&alloc_stream_, cudaStreamNonBlocking)));
        completer_ = std::thread([this] { complete_copies(); });
        return {};
    }

    int ordinal() const noexcept override { return ordinal_; }
    std::string name() const override { return where_; }

    Result<void> order_after_default_stream() override {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        cudaEvent_t event = nullptr;
        RL_TRY_VOID(check("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&event, cudaEventDisableTiming)));
        cudaError_t status = cudaEventRecord(event, cudaStreamLegacy);
        for (cudaStream_t stream : streams_) {
            if (status == cudaSuccess) {
                status = cudaStreamWaitEvent(stream, event, 0);
            }
        }
        if (status == cudaSuccess) {
            status = cudaStreamWaitEvent(convert_stream_, event, 0);
        }
        (void)cudaEventDestroy(event); // released once the waits are satisfied
        return check("cudaStreamWaitEvent", status);
    }

    Result<void> upload(std::byte* device, const std::byte* host, std::size_t length,
                        std::shared_ptr<const void> keep_alive) override {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        // The event first: once the copy is queued, nothing may fail before it is tracked, or
        // the slot would go back while the DMA still reads it.
        RL_TRY(event, take_event());
        cudaStream_t stream = streams_[next_stream_.fetch_add(1, std::memory_order_relaxed) % streams_.size()];
        cudaError_t status = cudaMemcpyAsync(device, host, length, cudaMemcpyHostToDevice, stream);
        if (status != cudaSuccess) {
            give_back_event(event);
            return cuda_error(where_, "cudaMemcpyAsync", status);
        }
        status = cudaEventRecord(event, stream);
        if (status != cudaSuccess) {
            (void)cudaStreamSynchronize(stream); // queued but untracked: wait for it here
            give_back_event(event);
            return cuda_error(where_, "cudaEventRecord", status);
        }
        {
            std::lock_guard lock(mutex_);
            pending_.push_back({event, std::move(keep_alive)});
        }
        wake_.notify_one();
        return {};
    }

    Result<void> fill_zero(std::byte* device, std::size_t length) override {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        return check("cudaMemsetAsync", cudaMemsetAsync(device, 0, length, streams_.front()));
    }

    Result<std::byte*> allocate_scratch(std::size_t length) override {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        void* memory = nullptr;
        RL_TRY_VOID(
            check("cudaMallocAsync", cudaMallocAsync(&memory, std::max<std::size_t>(length, 1), alloc_stream_)));
        scratch_.allocated(memory, length);
        // Usable from every stream once this returns.
        auto synchronized = check("cudaStreamSynchronize", cudaStreamSynchronize(alloc_stream_));
        if (!synchronized) {
            scratch_.freed(memory); // the caller never sees it: give it back here
            (void)cudaFreeAsync(memory, alloc_stream_);
            return synchronized.error();
        }
        return static_cast<std::byte*>(memory);
    }

    void free_scratch(std::byte* scratch) noexcept override {
        DeviceGuard guard(ordinal_);
        // Uploads into it may still run (staged ones hold no slot that the run waited for).
        for (cudaStream_t stream : streams_) {
            (void)cudaStreamSynchronize(stream);
        }
        // Uncounted before the free is queued: from then on the pool may hand the same address
        // to another allocation, whose count a late freed() would erase.
        scratch_.freed(scratch);
        (void)cudaFreeAsync(scratch, alloc_stream_);
    }

    std::uint64_t take_scratch_peak_bytes() noexcept override { return scratch_.take_peak(); }

    Result<void> convert(std::byte* to, DType to_type, std::byte* from, DType from_type, std::uint64_t count) override {
        auto queued = queue_conversion(to, to_type, from, from_type, count);
        if (!queued) {
            free_scratch(from); // the contract: `from` is freed either way
        }
        return queued;
    }

    // An event after every stream's queued work (the convert stream waits for the upload
    // streams, as a conversion does), tracked by the completion thread in queue order: it calls
    // `landed` there once the event completed, after the copies queued before it were released.
    Result<void> when_landed(std::function<void(bool ok)> landed) override {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        RL_TRY_VOID(join_streams_into(convert_stream_));
        RL_TRY(event, take_event());
        cudaError_t status = cudaEventRecord(event, convert_stream_);
        if (status != cudaSuccess) {
            give_back_event(event);
            return cuda_error(where_, "cudaEventRecord", status);
        }
        {
            std::lock_guard lock(mutex_);
            pending_.push_back({event, nullptr, std::move(landed)});
        }
        wake_.notify_one();
        return {};
    }

    Result<std::shared_ptr<std::byte>> staging(std::size_t length) override {
        return staging_->take(ordinal_, length, where_);
    }

    Result<void> download(std::byte* host, const std::byte* device, std::size_t length) override {
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        cudaStream_t stream = streams_[next_stream_.fetch_add(1, std::memory_order_relaxed) % streams_.size()];
        RL_TRY_VOID(check("cudaMemcpyAsync", cudaMemcpyAsync(host, device, length, cudaMemcpyDeviceToHost, stream)));
        return check("cudaStreamSynchronize", cudaStreamSynchronize(stream));
    }

    Result<void> synchronize() override {
        {
            std::unique_lock lock(mutex_);
            drained_.wait(lock, [this] { return pending_.empty() && !completing_; });
        }
        DeviceGuard guard(ordinal_);
        for (cudaStream_t stream : streams_) {
            record(check("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
        }
        for (cudaStream_t stream : {convert_stream_, alloc_stream_}) {
            if (stream != nullptr) {
                record(check("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
            }
        }
        std::lock_guard lock(mutex_);
        if (first_error_) {
            Error error = std::move(*first_error_);
            first_error_.reset(); // the next load on this link starts clean
            return error;
        }
        return {};
    }

private:
    struct Pending {
        cudaEvent_t event;
        std::shared_ptr<const void> keep_alive;
        std::function<void(bool ok)> landed; // when_landed's, or empty for a copy
    };

    // `stream` waits for every upload queued so far, on every upload stream.
    Result<void> join_streams_into(cudaStream_t stream) {
        for (cudaStream_t upload : streams_) {
            cudaEvent_t event = nullptr;
            RL_TRY_VOID(check("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&event, cudaEventDisableTiming)));
            cudaError_t status = cudaEventRecord(event, upload);
            if (status == cudaSuccess) {
                status = cudaStreamWaitEvent(stream, event, 0);
            }
            (void)cudaEventDestroy(event); // released once the wait is satisfied
            RL_TRY_VOID(check("cudaStreamWaitEvent", status));
        }
        return {};
    }

    Result<void> queue_conversion(std::byte* to, DType to_type, std::byte* from, DType from_type, std::uint64_t count) {
        auto to_kind = float_kind(to_type);
        auto from_kind = float_kind(from_type);
        if (!to_kind || !from_kind) {
            return fail(errc::unsupported, where_ + ": cannot convert " + std::string(torch_name(from_type)) + " to " +
                                               std::string(torch_name(to_type)) + " on the GPU");
        }
        DeviceGuard guard(ordinal_);
        RL_TRY_VOID(check("cudaSetDevice", guard.status()));
        RL_TRY_VOID(join_streams_into(convert_stream_)); // after every upload queued so far
        RL_TRY_VOID(check("convert kernel", static_cast<cudaError_t>(launch_convert(to, *to_kind, from, *from_kind,
                                                                                    count, convert_stream_))));
        scratch_.freed(from); // before the free is queued (see free_scratch)
        cudaError_t freed = cudaFreeAsync(from, convert_stream_);
        if (freed != cudaSuccess) {
            record(cuda_error(where_, "cudaFreeAsync", freed)); // the conversion is queued: report it at the end
        }
        return {};
    }

    Result<void> check(const char* call, cudaError_t status) const {
        if (status != cudaSuccess) {
            return cuda_error(where_, call, status);
        }
        return {};
    }

    void record(Result<void> result) {
        if (!result) {
            std::lock_guard lock(mutex_);
            if (!first_error_) {
                first_error_ = result.error();
            }
        }
    }

    Result<cudaEvent_t> take_event() {
        {
            std::lock_guard lock(mutex_);
            if (!idle_events_.empty()) {
                cudaEvent_t event = idle_events_.back();
                idle_events_.pop_back();
                return event;
            }
        }
        // Blocking sync: the completion thread sleeps instead of spinning on a core the
        // workers need for hashing and decryption.
        cudaEvent_t event = nullptr;
        RL_TRY_VOID(check("cudaEventCreateWithFlags",
                          cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync)));
        return event;
    }

    void give_back_event(cudaEvent_t event) {
        std::lock_guard lock(mutex_);
        idle_events_.push_back(event);
    }

    // The completion thread (its own, so setting the device here disturbs no one): waits for
    // each copy in queue order, then lets its slot go.
    void complete_copies() {
        (void)cudaSetDevice(ordinal_);
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
            if (pending_.empty()) {
                return; // stopping, nothing left
            }
            Pending pending = std::move(pending_.front());
            pending_.pop_front();
            completing_ = true;
            lock.unlock();
            cudaError_t status = cudaEventSynchronize(pending.event);
            if (status != cudaSuccess) {
                record(cuda_error(where_, "a host-to-device copy", status));
            }
            pending.keep_alive.reset(); // the slot goes back to the ring here
            if (pending.landed) {
                pending.landed(status == cudaSuccess);
            }
            lock.lock();
            idle_events_.push_back(pending.event);
            completing_ = false;
            if (pending_.empty()) {
                drained_.notify_all();
            }
        }
    }

    const int ordinal_;
    const std::string where_;
    std::vector<cudaStream_t> streams_;
    cudaStream_t convert_stream_ = nullptr;
    cudaStream_t alloc_stream_ = nullptr;
    std::atomic<std::uint32_t> next_stream_{0};
    std::shared_ptr<StagingPool> staging_ = std::make_shared<StagingPool>();
    ScratchAccount scratch_;

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable drained_;
    std::deque<Pending> pending_;          // guarded by mutex_
    std::vector<cudaEvent_t> idle_events_; // guarded by mutex_
    bool completing_ = false;              // guarded by mutex_
    bool stopping_ = false;                // guarded by mutex_
    std::optional<Error> first_error_;     // guarded by mutex_
    std::thread completer_;
};

} // namespace

Result<std::unique_ptr<DeviceLink>> open_device_link(int ordinal) {
    auto devices = cuda_device_count(); // one probe, one wording of "why not"
    if (!devices) {
        Error error = devices.error();
        error.detail = "cuda:" + std::to_string(ordinal) + ": " + error.detail;
        return error;
    }
    const int count = *devices;
    if (ordinal >= count) {
        return fail(errc::invalid_argument, "cuda:" + std::to_string(ordinal) + ": this machine has " +
                                                std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s"));
    }
    auto link = std::make_unique<CudaDeviceLink>(ordinal);
    RL_TRY_VOID(link->start());
    return std::unique_ptr<DeviceLink>(std::move(link));
}

} // namespace ringload::gpu
