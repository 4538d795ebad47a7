// engine/src/hash_stream.cpp
#include "ringload/engine/hash_stream.hpp"

#include "ringload/engine/worker_pool.hpp"
#include "sha256_ni.hpp"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <pthread.h>
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
    // A fork copies this object with the parent's lock state and none of its threads: the
    // lock is held across the fork, and the child starts afresh (threads on its first add()).
    HashThreads() {
        ::pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                         [] {
                             HashThreads& self = instance();
                             self.ready_.clear(); // the parent's loads: none of them goes on here
                             self.held_ = 0;
                             self.started_by_ = 0;
                             self.mutex_.unlock();
                         });
    }

    // On first use, and in a forked child, which has this object but none of the parent's
    // threads. False when not one thread could start (the process is out of them).
    bool start_threads_if_needed() {
        if (started_by_ != ::getpid()) { // first use, or a child (the fork handler reset the rest)
            started_by_ = ::getpid();
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
        LanedSha256::hash_together({&job.update, 1});
        if (job.after) {
            job.after();
        }
    }

    // A stream this thread holds: the jobs it took from the stream's queue, the first one
    // hashed up to `done_bytes`.
    struct Lane {
        HashStream* stream = nullptr;
        std::deque<HashStream::Job> jobs;
        std::size_t done_bytes = 0;
    };

    // A thread holds its share of the streams with work (held or waiting), up to the lanes a
    // core runs together: 4 files on 2 cores, two each (2 x 2.98 GB/s); 2 files, one each (one
    // core's two lanes, 2.98 GB/s, would fall behind a disk that two cores keep up with).
    std::size_t share_locked() const {
        const std::size_t active = ready_.size() + held_;
        return std::clamp<std::size_t>((active + thread_count_ - 1) / thread_count_, 1, sha_ni_lanes_max);
    }

    void take_streams_locked(std::vector<Lane>& lanes) {
        const std::size_t share = share_locked();
        while (lanes.size() < share && !ready_.empty()) {
            HashStream* stream = ready_.front();
            ready_.pop_front();
            stream->queued_ = false;
            stream->taken_ = true;
            ++held_;
            lanes.push_back({stream, {}, 0});
        }
        if (!ready_.empty()) {
            work_.notify_one(); // more than this thread's share waits: wake another
        }
    }

    // Each lane takes what its stream has queued since; a lane with nothing left lets its stream
    // go (wait_idle() may return). A dropped stream's jobs go to `discarded`, to die outside the
    // lock; the stream stays held (`dropping`) until they have.
    void refill_locked(std::vector<Lane>& lanes, std::vector<HashStream::Job>& discarded,
                       std::vector<HashStream*>& dropping) {
        for (auto lane = lanes.begin(); lane != lanes.end();) {
            HashStream& stream = *lane->stream;
            for (; !stream.jobs_.empty(); stream.jobs_.pop_front()) {
                lane->jobs.push_back(std::move(stream.jobs_.front()));
            }
            if (stream.dropped_) {
                std::move(lane->jobs.begin(), lane->jobs.end(), std::back_inserter(discarded));
                dropping.push_back(&stream);
                lane = lanes.erase(lane);
            } else if (lane->jobs.empty()) {
                release_locked(stream);
                lane = lanes.erase(lane);
            } else {
                ++lane;
            }
        }
    }

    void release_locked(HashStream& stream) {
        stream.taken_ = false;
        --held_;
        stream.idle_.notify_all();
    }

    // The lanes' first jobs together, up to the end of the shortest (at most 2 MiB, so that a
    // drop or a stream to join waits little); each job that ends runs its `after` and lets go
    // of its bytes.
    static void hash_step(std::vector<Lane>& lanes) {
        constexpr std::size_t step_max_bytes = 2 << 20;
        std::size_t step = step_max_bytes;
        for (const Lane& lane : lanes) {
            step = std::min(step, lane.jobs.front().update.bytes.size() - lane.done_bytes);
        }
        LanedSha256::Update updates[sha_ni_lanes_max];
        for (std::size_t l = 0; l < lanes.size(); ++l) {
            const LanedSha256::Update& whole = lanes[l].jobs.front().update;
            updates[l] = {whole.hash, whole.bytes.subspan(lanes[l].done_bytes, step)};
        }
        LanedSha256::hash_together({updates, lanes.size()});
        for (Lane& lane : lanes) {
            lane.done_bytes += step;
            HashStream::Job& job = lane.jobs.front();
            if (lane.done_bytes == job.update.bytes.size()) {
                if (job.after) {
                    job.after();
                }
                lane.jobs.pop_front();
                lane.done_bytes = 0;
            }
        }
    }

    // Holds its share of the streams and hashes them together, step by step, taking each
    // stream's new jobs as they come: lanes stay full while the files keep coming.
    void run() {
        ::pthread_setname_np(::pthread_self(), "ringload-hash"); // in top and perf
        std::vector<Lane> lanes;
        std::vector<HashStream::Job> discarded;
        std::vector<HashStream*> dropping;
        std::unique_lock lock(mutex_);
        for (;;) {
            work_.wait(lock, [&] { return !ready_.empty(); });
            take_streams_locked(lanes);
            for (;;) {
                refill_locked(lanes, discarded, dropping);
                if (!dropping.empty()) {
                    lock.unlock();
                    discarded.clear(); // what the dropped jobs kept dies outside the lock
                    lock.lock();
                    for (HashStream* stream : dropping) {
                        release_locked(*stream);
                    }
                    dropping.clear();
                }
                if (lanes.empty()) {
                    break;
                }
                lock.unlock();
                hash_step(lanes);
                lock.lock();
                take_streams_locked(lanes);
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable work_;
    std::deque<HashStream*> ready_;
    std::size_t held_ = 0; // streams taken by a thread
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
