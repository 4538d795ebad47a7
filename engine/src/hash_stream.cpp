// engine/src/hash_stream.cpp
#include "ringload/engine/hash_stream.hpp"

#include "ringload/engine/worker_pool.hpp"

#include <algorithm>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

namespace ringload {

// The process's hashing threads and the streams with jobs waiting for one. Made on first use
// and never destroyed: threads blocked on the queue need nothing at exit.
class HashThreads {
public:
    static HashThreads& instance() {
        static HashThreads* threads = new HashThreads();
        return *threads;
    }

    void add(HashStream& stream, HashStream::Job job) {
        std::unique_lock lock(mutex_);
        if (stream.dropped_) {
            lock.unlock();
            return; // `job` (and what it keeps) dies outside the lock
        }
        if (!start_threads_if_needed()) {
            lock.unlock();
            run_here(job); // no thread could start: the caller hashes, as it did before these
            return;
        }
        stream.jobs_.push_back(std::move(job));
        if (!stream.taken_ && !stream.queued_) {
            stream.queued_ = true;
            ready_.push_back(&stream);
            work_.notify_one();
        }
    }

    void wait_idle(HashStream& stream) {
        std::unique_lock lock(mutex_);
        stream.idle_.wait(lock, [&] { return stream.jobs_.empty() && !stream.taken_; });
    }

    void drop(HashStream& stream) noexcept {
        std::deque<HashStream::Job> dropped;
        std::unique_lock lock(mutex_);
        stream.dropped_ = true;
        dropped.swap(stream.jobs_);
        if (stream.queued_) {
            ready_.erase(std::find(ready_.begin(), ready_.end(), &stream));
            stream.queued_ = false;
        }
        stream.idle_.wait(lock, [&] { return !stream.taken_; });
        lock.unlock();
        // `dropped` dies here, outside the lock: what the jobs kept may take other locks.
    }

private:
    HashThreads() = default;

    // Also after a fork: the child has this object but none of the parent's threads. False
    // when not one thread could start (the process is out of them).
    bool start_threads_if_needed() {
        if (started_by_ != ::getpid()) {
            started_by_ = ::getpid();
            idle_threads_ = 0;
            thread_count_ = 0;
            const std::size_t wanted = std::max<std::size_t>(available_cores(), 1);
            try {
                for (; thread_count_ < wanted; ++thread_count_) {
                    std::thread([this] { run(); }).detach();
                }
            } catch (const std::system_error&) {
                // fewer threads, or none
            }
        }
        return thread_count_ > 0;
    }

    static void run_here(HashStream::Job& job) {
        const LanedSha256::Update update{job.hash, job.bytes};
        LanedSha256::hash_together({&update, 1});
        if (job.after) {
            job.after();
        }
    }

    // Takes up to four streams at a time: its share of those waiting, counting the idle threads
    // (4 files on 2 cores: two each; one core's pipeline is fullest with four).
    void run() {
        std::unique_lock lock(mutex_);
        std::vector<HashStream*> taken;
        std::vector<HashStream::Job> jobs;
        std::vector<LanedSha256::Update> updates;
        for (;;) {
            ++idle_threads_;
            work_.wait(lock, [&] { return !ready_.empty(); });
            --idle_threads_;
            const std::size_t share = (ready_.size() + idle_threads_) / (idle_threads_ + 1);
            const std::size_t count = std::clamp<std::size_t>(share, 1, 4);
            for (std::size_t s = 0; s < count && !ready_.empty(); ++s) {
                HashStream* stream = ready_.front();
                ready_.pop_front();
                stream->queued_ = false;
                stream->taken_ = true;
                jobs.push_back(std::move(stream->jobs_.front()));
                stream->jobs_.pop_front();
                taken.push_back(stream);
            }
            if (!ready_.empty()) {
                work_.notify_one(); // more than this thread's share: wake another
            }
            lock.unlock();
            for (const HashStream::Job& job : jobs) {
                updates.push_back({job.hash, job.bytes});
            }
            LanedSha256::hash_together(updates);
            for (HashStream::Job& job : jobs) {
                if (job.after) {
                    job.after();
                }
            }
            jobs.clear(); // drops what they kept, outside the lock
            updates.clear();
            lock.lock();
            for (HashStream* stream : taken) {
                stream->taken_ = false;
                if (!stream->jobs_.empty() && !stream->dropped_) {
                    stream->queued_ = true;
                    ready_.push_back(stream);
                } else {
                    stream->idle_.notify_all();
                }
            }
            taken.clear();
        }
    }

    std::mutex mutex_;
    std::condition_variable work_;
    std::deque<HashStream*> ready_;
    std::size_t idle_threads_ = 0;
    std::size_t thread_count_ = 0;
    pid_t started_by_ = 0;
};

HashStream::~HashStream() {
    drop();
}

void HashStream::add(Job job) {
    HashThreads::instance().add(*this, std::move(job));
}

void HashStream::wait_idle() {
    HashThreads::instance().wait_idle(*this);
}

void HashStream::drop() noexcept {
    HashThreads::instance().drop(*this);
}

} // namespace ringload
