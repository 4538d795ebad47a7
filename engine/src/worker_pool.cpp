// engine/src/worker_pool.cpp
#include "ringload/engine/worker_pool.hpp"

#include "ringload/cpu_quota.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ringload {

class WorkerPool::Impl {
public:
    explicit Impl(std::size_t threads) : pool(threads) {}
    boost::asio::thread_pool pool;
};

std::size_t available_cores() noexcept {
    std::size_t cores = 0;
    // The affinity mask respects taskset and cgroup cpusets, unlike hardware_concurrency.
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
        cores = static_cast<std::size_t>(CPU_COUNT(&set));
    } else {
        cores = std::max<std::size_t>(std::thread::hardware_concurrency(), 1);
    }
    try {
        if (const auto quota = cpu_quota()) {
            cores = std::min(cores, std::max<std::size_t>(static_cast<std::size_t>(std::ceil(quota->cpus)), 1));
        }
    } catch (...) { // (a string that could not be allocated): the mask stands
    }
    return cores;
}

WorkerPool::WorkerPool(std::size_t thread_count) : thread_count_(thread_count == 0 ? available_cores() : thread_count) {
    impl_ = std::make_unique<Impl>(thread_count_);
}

WorkerPool::~WorkerPool() {
    impl_->pool.join();
}

void WorkerPool::post(std::function<void()> work) {
    boost::asio::post(impl_->pool, std::move(work));
}

void WorkerPool::parallel_for(std::size_t count, const std::function<void(std::size_t)>& fn) {
    std::mutex mutex;
    std::condition_variable all_done;
    std::size_t remaining = count;
    for (std::size_t i = 0; i < count; ++i) {
        post([&, i] {
            fn(i);
            std::lock_guard lock(mutex);
            if (--remaining == 0) {
                all_done.notify_one();
            }
        });
    }
    std::unique_lock lock(mutex);
    all_done.wait(lock, [&] { return remaining == 0; });
}

} // namespace ringload
