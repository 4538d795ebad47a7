// engine/include/ringload/engine/worker_pool.hpp
//
// The threads that run CPU stages: a load's handler work on each chunk (copy out of slots,
// hash, decrypt, dtype conversion) and a write's window fills (copy in, hash, encrypt). One per
// core by default: I/O needs no threads of its own, it completes on the loop.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace ringload {

class WorkerPool {
public:
    explicit WorkerPool(std::size_t thread_count = 0); // 0: one per available core
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    void post(std::function<void()> work);
    std::size_t thread_count() const noexcept { return thread_count_; }
    // Runs fn(i) for i in [0, count) across the pool and waits.
    void parallel_for(std::size_t count, const std::function<void(std::size_t)>& fn);

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
    std::size_t thread_count_ = 0;
};

// The cores this process may keep busy: its affinity mask (taskset, cpusets), and no more than
// its CPU quota rounded up (cpu_quota.hpp: a Kubernetes CPU limit), at least one. The engine's
// workers, hashing threads, files read at once and placement "auto" are sized by it.
std::size_t available_cores() noexcept;

} // namespace ringload
